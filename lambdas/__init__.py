"""Lambda handler sources. Installed as ``neuronfleet.lambdas`` so the constructs that deploy them can
find them as CDK assets in a wheel install as well as in this repository (pyproject.toml maps it).

Each handler package keeps pure, testable logic, its AWS calls in thin adapters (``adapters.py``), a thin
handler, and one settings object (``settings.py``: ``to_environment`` for the construct, ``from_environment``
for the handler, the only place the environment is read). Shared by all: ``namespaces`` (the metric
namespaces), ``environment`` (typed reads, InvalidEnvironment), ``topic`` (the SNS adapter); each package
reaches them through its ``_shared`` module, which works both here and deployed (lambdas/ as code root).
"""

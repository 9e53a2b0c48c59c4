"""Lambda handler sources. Installed as ``neuronfleet.lambdas`` so the constructs that deploy them can
find them as CDK assets in a wheel install as well as in this repository (pyproject.toml maps it).

Each handler keeps its AWS calls in a thin adapter around pure, testable logic.
"""

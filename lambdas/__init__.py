"""Lambda handler sources. Installed as ``neuronfleet.lambdas`` so the constructs that deploy them can
find them as CDK assets in a wheel install as well as in this repository (pyproject.toml maps it).

Each handler package (``failover``, ``capacity_alert``, ``cost``) keeps pure, testable logic, its AWS calls in thin
adapters (``adapters.py``) and a thin handler. Two top-level packages live here too, imported under one name in the
tests and deployed: ``neuronfleet_contract`` (what the constructs and the handlers agree on: tag keys, variant and
alarm names, metric namespaces, the environment codec, each function's settings object with ``to_environment`` for
the construct and ``from_environment`` for the handler, the only place the environment is read) and
``neuronfleet_runtime`` (handler code several functions share: the SNS adapter, the announcements outbox,
reservations). The constructs import the contract, never a handler's module (tests/unit/test_contract.py); each
function's asset holds its own package and those two (neuronfleet.core.assets).
"""

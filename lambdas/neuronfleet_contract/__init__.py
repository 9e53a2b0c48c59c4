"""What the constructs and the Lambda handlers must agree on: the contract between the two sides.

Pure: no boto3, no Powertools, no CDK. Both sides import it under this one path, ``neuronfleet_contract``: the
construct library (installed from lambdas/neuronfleet_contract, pyproject.toml maps it) and every deployed function
(its asset carries this folder at its code root), so the handlers import it the same way in tests and deployed.

- ``tags``: the tag keys the constructs put on resources and the cost handlers read back;
- ``variants``: the names of an endpoint's serving variants (``neuron``, ``gpu``);
- ``alarms``: the names NeuronEndpoint gives its variants' alarms, which the failover derives from the endpoint name;
- ``namespaces``: the CloudWatch metric namespaces and metric names;
- ``environment``: the codec of a function's environment (typed reads, InvalidEnvironment).

A construct module never imports a handler's module (tests/unit/test_contract.py holds that).
"""

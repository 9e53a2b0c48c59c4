"""What the constructs and the Lambda handlers must agree on: the contract between the two sides.

Pure: no boto3, no Powertools, no CDK. Both sides import it under this one path, ``neuronfleet_contract``: the
construct library and every deployed function (its asset carries this folder at its code root), so the handlers
import it the same way in tests and deployed. It lives in shared/, a source folder of its own beside constructs/
and lambdas/: both sides import it by its real path, and it imports neither (docs/layout.md).

- ``tags``: the tag keys the constructs put on resources and the cost handlers read back;
- ``variants``: the names of an endpoint's serving variants (``neuron``, ``gpu``);
- ``alarms``: the names NeuronEndpoint gives its variants' alarms, which the failover derives from the endpoint name;
- ``namespaces``: the CloudWatch metric namespaces and metric names;
- ``health``: the dimensions of the kit's own health metrics (``service`` and ``Fleet``) and ``FLEET``;
- ``environment``: the one codec of the functions' configurations: each field of a frozen ``*Config`` declares its
  variable (``field(metadata=variable(...))``), and the codec writes (``to_environment``, for the construct; tokens
  pass through) and reads (``from_environment``, for the handler; InvalidEnvironment naming variable, value and what
  is allowed) them, and documents by the same metadata (``to_document``/``from_document``: the capacity policy).
  The defaults live here only: the user's settings (neuronfleet.settings, ``*Settings``) import them.
- ``failover``, ``capacity_alert``, ``cost``: each function's configuration (``*Config``) and what its construct
  configures or subscribes to: the failover's policy
  defaults and capacity bounds; the capacity events, a Capacity Block's termination and the GPU pool; the cost
  bases, the endpoint model and the endpoint resource type;
- ``cur``: the Athena queries the CurAnalytics construct saves and the collector runs.
- ``capacity_lifecycle``: Capacity Blocks' lifecycle facts (with sources), the capacity policy and its verdict, the
  lifecycle function's settings; shared by ``neuronfleet capacity`` and lambdas/capacity_lifecycle.
- ``judge``: the pilot judge's tolerances (with their sources), configuration, prompt-set format and verdict record.
- ``pool_schedule``: the sharing feature's schedule function: a shared pool's day/night schedule (refused with
  field/value/allowed), its target split at an instant, the pod labels and annotations of the checkpoint signal, the
  pool's metric names.

What may import what is in docs/layout.md; tests/unit/test_contract.py holds it.
"""

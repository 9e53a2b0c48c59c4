"""Runtime code several functions share (never imported by a construct; the command line's ``neuronfleet capacity``
and its account check use ``capacity_block_calls`` and ``reservations``): ``topic`` (the SNS adapter),
``announcements`` (the announce-once outbox on DynamoDB), ``reservations`` (reading capacity reservations),
``capacity_block_calls`` (the EC2 Capacity Block calls: search, buy and extend once, status; also used by the
``neuronfleet capacity`` command on the user's machine), ``fleet_metrics`` (the ``Fleet`` dimension on a handler's
health metrics).

Imported as ``neuronfleet_runtime`` in the tests (installed from shared/neuronfleet_runtime)
and deployed (the functions that use it carry this folder at their code root): one import path, no fallbacks.
"""

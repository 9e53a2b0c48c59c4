"""Runtime code several functions share (never imported by a construct; the command line's ``neuronfleet capacity``
and its account check use ``capacity_blocks`` and ``reservations``): ``topic`` (the SNS adapter),
``announcements`` (the announce-once outbox on DynamoDB), ``reservations`` (reading capacity reservations),
``capacity_blocks`` (EC2 Capacity Blocks: search, buy and extend once; also used by the ``neuronfleet capacity``
command on the user's machine).

Imported as ``neuronfleet_runtime`` in the tests (installed from shared/neuronfleet_runtime)
and deployed (the functions that use it carry this folder at their code root): one import path, no fallbacks.
"""

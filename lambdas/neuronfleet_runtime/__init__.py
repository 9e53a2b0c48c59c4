"""Runtime code several functions share (never imported by the constructs): ``topic`` (the SNS adapter),
``announcements`` (the announce-once outbox on DynamoDB), ``reservations`` (reading capacity reservations),
``capacity_blocks`` (EC2 Capacity Blocks: search, buy and extend once; also used by the ``neuronfleet capacity``
command on the user's machine).

Imported as ``neuronfleet_runtime`` in the tests (installed from lambdas/neuronfleet_runtime, pyproject.toml maps it)
and deployed (the functions that use it carry this folder at their code root): one import path, no fallbacks.
"""

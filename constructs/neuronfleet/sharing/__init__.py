"""One pool of Neuron capacity shared by day and night (Rainier's pattern): inference by day, training borrowing the
pool at night, checkpointed before the morning. The schedule's rules live in ``neuronfleet_contract.pool_schedule``;
here are the pins (``pins``: Kueue, EventBridge Scheduler, Kubernetes termination) and the Kubernetes objects
(``manifests``: Kueue's queues and priorities, the examples wired to the schedule), which import without
aws-cdk-lib."""

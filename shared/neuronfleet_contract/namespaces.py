"""neuronfleet's CloudWatch metric namespaces: one constant per namespace, ``NeuronFleet/<who publishes>``.

Each namespace has one publisher; the docstrings say which metric names and dimensions it puts there and
who reads them. Pure constants (no imports): the handlers read them, and so do the constructs that grant
``cloudwatch:PutMetricData`` per namespace, draw dashboards and alarm on these metrics
(``from neuronfleet_contract.namespaces import ...``). Where a namespace is configurable, the handler's
settings object carries it (its default is the constant here).
"""

AWS_SAGEMAKER_METRICS = "AWS/SageMaker"
"""Not the kit's (so not named ``*_NAMESPACE``, the kit's own): AWS's namespace of SageMaker endpoint metrics
(``Invocations``, ``ModelLatency``, ``Invocation5XXErrors``, ..., dimensions ``EndpointName`` and ``VariantName``:
SageMaker developer guide, "Monitor Amazon SageMaker AI with Amazon CloudWatch",
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html, read 2026-11-23). Read by the endpoint
alarms, the failover, the report's unit costs and the waste detector."""

NEURON_NAMESPACE = "NeuronFleet/Neuron"
"""Published by the kit's own publisher on the Trainium/Inferentia hosts (``neuronfleet/node/utilisation.py``, fed
by neuron-monitor's JSON; TrainiumCluster's user data runs it): ``NeuronCoreUtilization`` (unit Percent, 0-100: the
in-use NeuronCores' utilisation summed over all the host's NeuronCores, one datapoint a minute, 0 when no Neuron
runtime runs), dimension ``InstanceId``. The name, unit and dimension are the kit's, not neuron-monitor's.
Read by the waste detector (``cost/waste``,
``WasteConfig.neuron_namespace``) and the CostMonitors dashboard."""

NEURON_CORE_UTILIZATION = "NeuronCoreUtilization"
"""The metric name of NeuronCore utilisation (percent) in :data:`NEURON_NAMESPACE`."""

SPEND_NAMESPACE = "NeuronFleet/Cost"
"""Published by the spend collector (``cost/collector``, PutMetricData; its role may write only here):
``Spend`` (USD, unit None; one datapoint per change of a day's total, timestamped at noon of that day, so a
day's Sum is the ledger's figure), dimensions ``Fleet`` and ``Family`` (trainium | inferentia | gpu).
Read by the CostMonitors dashboard. Configurable: ``CollectorConfig.metrics_namespace``."""

SPEND_METRIC = "Spend"
"""The metric name of spend in :data:`SPEND_NAMESPACE`."""

WORKLOAD_NAMESPACE = "NeuronFleet/Workload"
"""Published by the workloads themselves (your serving code): ``Tokens`` (count), dimensions ``Fleet``,
``Endpoint`` and ``Variant`` (neuron | gpu). Read by the migration report (``cost/report``,
``ReportConfig.tokens_namespace``)."""

TOKENS_METRIC = "Tokens"
"""The metric name of tokens served in :data:`WORKLOAD_NAMESPACE`."""

COST_MONITORS_NAMESPACE = "NeuronFleet/CostMonitors"
"""Published by the spend collector's own Powertools metrics (embedded metric format, no IAM needed), about
the run rather than the spend: ``CostExplorerRequests`` (each billed $0.01), ``BadRows``, ``RowsWritten``,
``RowsRetracted``, ``UnconfirmedSpend`` (published totals whose PutMetricData outcome is unknown: not resent) and
``UnpublishableSpend`` (rows or totals CloudWatch would refuse) (count), dimensions ``service`` =
``neuronfleet-cost-collector`` and ``Fleet`` = the collector's ``FLEET`` (``service`` alone without one:
``neuronfleet_contract.health``). Read by ``CostMonitors.metric_collector``."""

FAILOVER_NAMESPACE = "NeuronFleet/Failover"
"""Published by the endpoint failover (``failover/handler``, Powertools EMF): a count per step taken (dimension
``Endpoint``; ``failover.handler.METRIC_BY_ACTION``: ``TrafficShiftsToGpu``, ``TrafficShiftsToNeuron``,
``BothVariantsFailing``, ...), ``FailoverErrors`` (count, an endpoint that could not be checked) and
``MalformedEvents`` (count, events refused), dimensions ``service`` = ``neuronfleet-failover`` and ``Fleet`` = the
function's ``FLEET`` (``service`` alone without one: ``neuronfleet_contract.health``). Read by
``EndpointFailover.metric_failover_errors`` / ``metric_malformed_events``."""

CAPACITY_NAMESPACE = "NeuronFleet/Capacity"
"""Published by the capacity alerts (``capacity_alert/handler``, Powertools EMF): ``CapacityAnnouncements`` (count,
messages published by a run, its own and earlier runs' it completed) and ``MalformedEvents`` (count, events refused
as malformed), dimensions ``service`` = ``neuronfleet-capacity`` and ``Fleet`` = the function's ``FLEET``
(``service`` alone without one: ``neuronfleet_contract.health``). The EKS node-group alerts
(``capacity_alert/nodegroup_handler``) publish ``CapacityAnnouncements`` here under the same service. Read by
``CapacityAlerts.metric_*`` and ``NodegroupCapacityAlerts.metric_announcements``. The Capacity Block purchase
announcer (``capacity_lifecycle/purchases``) publishes ``MalformedEvents`` here under its own service
(``capacity_lifecycle.PURCHASES_SERVICE``). (Earlier versions put them under :data:`FAILOVER_NAMESPACE`; versions
before per-fleet health metrics published ``service`` alone.)"""

WASTE_NAMESPACE = "NeuronFleet/Waste"
"""Published by the waste detector (``cost/waste``, Powertools EMF, no IAM needed): ``MalformedEvents`` (count,
events refused: it runs on its EventBridge schedule only), dimensions ``service`` = ``neuronfleet-waste`` and
``Fleet`` = the detector's ``FLEET`` (``neuronfleet_contract.health``). Read by
``CostMonitors.metric_waste_malformed_events``."""

ECONOMICS_NAMESPACE = "NeuronFleet/Economics"
"""Published by the migration report (``cost/report``, PutMetricData; its role may write only here): the unit costs
it computed, so the dashboard shows the report's own figures: ``CostPerMillionInferences`` and
``CostPerMillionTokens`` (USD, unit None), dimensions ``Fleet``, ``Endpoint`` and ``Variant`` (neuron | gpu; gpu only
for a GPU variant that is a baseline, never a standby), one datapoint per report run."""

COST_PER_MILLION_METRICS = {"inferences": "CostPerMillionInferences", "tokens": "CostPerMillionTokens"}
"""The metric names in :data:`ECONOMICS_NAMESPACE` per unit."""

JUDGE_NAMESPACE = "NeuronFleet/Judge"
"""Published by the pilot judge (``judge/handler``, PutMetricData; its role may write only here): ``Verdict`` (1 go,
0 no-go) and the measures it judged (``TokenAgreement``, ``EmbeddingCosine``, ``TaskScoreDrop``, ``LatencyP99Ratio``,
unit None), dimensions ``Fleet`` and ``Endpoint`` (``Endpoint`` alone for a judge given no fleet:
``neuronfleet_contract.judge.verdict_dimensions``), one datapoint per judged run timestamped at its end; and
``NoVerdict`` (1 per run that ended without a verdict: a refused input, or prompts left unmeasured by transient
errors; then no ``Verdict`` point, so the verdict alarm keeps its state).
Read by the judge's verdict alarm, which NeuronEndpoint's cutover lists among its auto-rollback alarms, by its
no-verdict alarm (into the fleet's topic, never a rollback alarm), and by the migration report (``cost/report``: the
fleet's dimensions, the latest day's Minimum)."""

POOL_NAMESPACE = "NeuronFleet/Pool"
"""Published by a shared pool's schedule function (``pool_schedule/handler``, PutMetricData; its role may write only
here): ``PoolDevices`` (Neuron devices in use, unit Count), dimensions ``Pool`` and ``Role`` (inference | training |
idle), and ``CheckpointsMissed`` (training pods running at the morning without acknowledging the signal), dimension
``Pool``; one datapoint a run (every minute). Read by SharedNeuronPool's dashboard widgets and metric methods."""

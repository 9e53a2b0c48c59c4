"""PilotJudge: deploys the judge function of one NeuronEndpoint with least privilege and its verdict alarm."""

from __future__ import annotations

from aws_cdk import Annotations, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract.cost import JudgeRecords
from neuronfleet_contract.judge import (
    NO_VERDICT_METRIC,
    STYLE_BY_CONTAINER,
    VERDICT_METRIC,
    JudgeConfig,
    judge_alarm_name,
    judge_no_verdict_alarm_name,
    verdict_dimensions,
)
from neuronfleet_contract.namespaces import JUDGE_NAMESPACE

from ..core.args import duck, settings_argument
from ..core.functions import FleetFunction
from ..core.lookups import stack_of
from ..core.nag import acknowledge_wildcards
from ..core.pseudo import pseudo
from ..core.s3_reads import object_arn, owner_condition
from ..core.storage import secure_bucket
from ..facts.prices import hosting_usd_per_hour
from ..inference.endpoint import NeuronEndpoint
from ..settings import PilotJudgeSettings

JUDGE_TIMEOUT = Duration.minutes(15)
"""Lambda's longest run ("the maximum allowed value is 900 seconds", botocore 1.44.5 lambda CreateFunction Timeout,
read 2026-11-23): a batch stops itself before it (judge.handler.MARGIN_MS)."""
VERDICT_PERIOD = Duration.hours(1)
RECORDS_PREFIX = "judge/"


class PilotJudge(Construct):
    """The judge of one endpoint (its ``settings.judge`` unless ``settings`` is given).

    The function may invoke only this endpoint (``sagemaker:InvokeEndpoint``, each variant by ``TargetVariant``) and
    describe it, read only the prompt set's object, read and write only its own prefix of the records bucket, and
    put metrics only in ``NeuronFleet/Judge``. Its verdict alarm (``<endpoint name>-judge-verdict``) is in ALARM
    while the latest verdict is no-go (missing data keeps the last state): NeuronEndpoint's cutover lists it among
    its auto-rollback alarms. A run that gives no verdict (its input refused, or prompts left unmeasured by transient
    errors) publishes no ``Verdict`` point, so the verdict alarm keeps its state, and ``NoVerdict``: its alarm
    (``<endpoint name>-judge-no-verdict``, :attr:`no_verdict_alarm`) tells the topic.

    Example::

        judge = PilotJudge(self, "ChatJudge", endpoint=chat, topic=alerts.topic)
        judge.function; judge.verdict_alarm; judge.records_bucket; judge.metric_verdict()
    """

    def __init__(self, scope: Construct, construct_id: str, *, endpoint: NeuronEndpoint,
                 settings: PilotJudgeSettings | None = None, topic: sns.ITopic | None = None, fleet: str = "",
                 records_bucket: s3.IBucket | None = None,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> None:
        super().__init__(scope, construct_id)
        what = "PilotJudge"
        duck("endpoint", endpoint, "endpoint_name", "a NeuronEndpoint", what=what)
        chosen = settings if settings is not None else endpoint.settings.judge
        if chosen is None:
            from ..core.problems import InvalidSettings, Problem
            raise InvalidSettings([Problem("settings", None, "a PilotJudgeSettings, or an endpoint whose settings "
                                           "have a judge")], what=what)
        self.settings = settings_argument(chosen, PilotJudgeSettings, what=what)
        s, es = self.settings, endpoint.settings
        gpu = es.live_gpu_variant
        if gpu is None:
            from ..core.problems import InvalidSettings, Problem
            raise InvalidSettings([Problem("endpoint", endpoint.node.path, "an endpoint with a GPU variant running "
                                           "beside the Neuron one (gpu_variant, standby hot)")], what=what)
        if gpu.shadow:
            # not a warning: if SageMaker refuses TargetVariant on a shadow variant, every GPU answer is an error
            # and the verdict is a no-go naming the GPU variant's error rate (loud, at the first run)
            Annotations.of(self).add_info(
                "the GPU variant is a shadow variant: whether InvokeEndpoint's TargetVariant reaches a shadow variant "
                "is not documented in the sources read; if not, the first verdict is a no-go naming the GPU variant's "
                f"error rate. Check: aws sagemaker-runtime invoke-endpoint --endpoint-name {endpoint.endpoint_name} "
                "--target-variant gpu ... (docs/judge.md)")
        self.endpoint = endpoint
        self.fleet = fleet
        if records_bucket is None:  # verdict records: versioned, their reads and writes logged (issue 36's scan)
            access_logs = secure_bucket(self, "RecordsAccessLogs", removal_policy=removal_policy)
            records_bucket = secure_bucket(self, "Records", versioned=True, access_logs=access_logs,
                                           log_prefix="records/", removal_policy=removal_policy)
        self.records_bucket = records_bucket
        contract = JudgeConfig(
            endpoint_name=endpoint.endpoint_name, prompts_bucket=s.bucket, prompts_key=s.key,
            records_bucket=self.records_bucket.bucket_name, records_prefix=RECORDS_PREFIX,
            task="embeddings" if es.task == "embeddings" else "generation",
            style=STYLE_BY_CONTAINER[es.container], tolerances=s.tolerances.contract(),
            usd_per_hour={"neuron": hosting_usd_per_hour(es.instance_type), "gpu": hosting_usd_per_hour(gpu.instance_type)},
            max_new_tokens=s.max_new_tokens, fleet=fleet)
        description = f"neuronfleet pilot judge of {endpoint.endpoint_name}: Neuron vs GPU on the team's prompt set"
        self.function = FleetFunction(self, "Function", handler="judge.handler.handler", description=description,
                                      environment=contract.to_environment(), timeout=JUDGE_TIMEOUT, memory_size=512,
                                      topic=topic, reserved_concurrent_executions=1)
        role = self.function.role
        endpoint.grant_invoke(role)
        prompt_arn = object_arn(s.prompts)
        own = self.records_bucket.arn_for_objects(f"{RECORDS_PREFIX}{endpoint.endpoint_name}/*")
        role.add_to_principal_policy(iam.PolicyStatement(sid="DescribeTheEndpoint", actions=[
            "sagemaker:DescribeEndpoint"], resources=[endpoint.endpoint_arn]))
        role.add_to_principal_policy(iam.PolicyStatement(sid="ReadThePromptSet", actions=["s3:GetObject"],
                                                         resources=[prompt_arn], conditions=owner_condition(
                                                             stack_of(self), s.prompts_account)))
        role.add_to_principal_policy(iam.PolicyStatement(sid="OwnRecords", actions=["s3:GetObject", "s3:PutObject"],
                                                         resources=[own]))
        role.add_to_principal_policy(iam.PolicyStatement(sid="ListOwnRecords", actions=["s3:ListBucket"],
                                                         resources=[self.records_bucket.bucket_arn], conditions={
            "StringLike": {"s3:prefix": f"{RECORDS_PREFIX}{endpoint.endpoint_name}/*"}}))
        role.add_to_principal_policy(iam.PolicyStatement(
            sid="VerdictMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": JUDGE_NAMESPACE}}))
        acknowledge_wildcards(role, "PutMetricData has no resource scope (limited to the judge's namespace); the "
                                    "judge reads and writes only its endpoint's prefix of its records bucket",
                              resources=("*", own))
        self.verdict_alarm = self.metric_verdict().create_alarm(
            self, "VerdictAlarm", alarm_name=judge_alarm_name(endpoint.endpoint_name), threshold=1,
            evaluation_periods=1, comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.IGNORE,
            alarm_description=f"The pilot judge's latest verdict on {endpoint.endpoint_name} is no-go (Neuron's answers "
                              "differ from the GPU variant's past a tolerance, or a variant failed): an update of the "
                              "endpoint rolls back while it holds")
        self.no_verdict_alarm = self.metric_no_verdict().create_alarm(
            self, "NoVerdictAlarm", alarm_name=judge_no_verdict_alarm_name(endpoint.endpoint_name), threshold=1,
            evaluation_periods=1, comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"The pilot judge of {endpoint.endpoint_name} gave no verdict: it refused its input (a "
                              "malformed or missing prompt set, a bad run id) or transient errors left prompts "
                              "unmeasured. The verdict alarm keeps its last state; the function's log and "
                              "latest.json say why (docs/judge.md)")
        if topic is not None:
            for alarm in (self.verdict_alarm, self.no_verdict_alarm):
                alarm.add_alarm_action(cw_actions.SnsAction(topic))
                alarm.add_ok_action(cw_actions.SnsAction(topic))
        self.schedule: events.Rule | None = None
        if s.schedule:
            self.schedule = events.Rule(self, "Schedule", schedule=events.Schedule.expression(s.schedule),
                                        targets=[self.function.event_target()],
                                        description=f"A batch of the judge of {endpoint.endpoint_name}")

    def metric_verdict(self, **options: object) -> cloudwatch.Metric:
        """The verdict (1 go, 0 no-go), its Minimum over an hour by default."""
        return cloudwatch.Metric(namespace=JUDGE_NAMESPACE, metric_name=VERDICT_METRIC,
                                 dimensions_map=verdict_dimensions(self.endpoint.endpoint_name, self.fleet),
                                 statistic="Minimum", period=VERDICT_PERIOD, **options)  # type: ignore[arg-type]

    def metric_no_verdict(self, **options: object) -> cloudwatch.Metric:
        """Invocations that refused their input and runs that ended unmeasured (``NoVerdict``), their Sum over an
        hour by default."""
        return cloudwatch.Metric(namespace=JUDGE_NAMESPACE, metric_name=NO_VERDICT_METRIC,
                                 dimensions_map=verdict_dimensions(self.endpoint.endpoint_name, self.fleet),
                                 statistic="Sum", period=VERDICT_PERIOD, **options)  # type: ignore[arg-type]

    def grant_read_records(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read every verdict record of the bucket (all runs, states and latest verdicts)."""
        return self.records_bucket.grant_read(grantee, f"{RECORDS_PREFIX}*")

    @property
    def latest_record(self) -> JudgeRecords:
        """Where the endpoint's latest verdict lives (``<records bucket>/judge/<endpoint>/latest.json``)."""
        return JudgeRecords(endpoint=self.endpoint.endpoint_name, bucket=self.records_bucket.bucket_name,
                            prefix=RECORDS_PREFIX)

    def grant_read_latest(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read exactly the endpoint's latest verdict (the migration report's access): ``s3:GetObject`` on that one
        key, and ``s3:ListBucket`` limited to listing that key (``s3:prefix`` equal to it), so that the reader can
        tell a record not written yet from a refusal (without ListBucket S3 answers a missing key 403, not 404:
        GetObject's documentation, botocore 1.44.5). The ARNs are built from the bucket's name: a grantee in another
        stack imports one value per bucket."""
        record = self.latest_record
        bucket = f"arn:{pseudo().partition}:s3:::{record.bucket}"
        read = iam.Grant.add_to_principal(grantee=grantee, actions=["s3:GetObject"],
                                          resource_arns=[f"{bucket}/{record.key}"])
        listing = iam.Grant.add_to_principal(grantee=grantee, actions=["s3:ListBucket"], resource_arns=[bucket],
                                             conditions={"StringEquals": {"s3:prefix": record.key}})
        return read.combine(listing)

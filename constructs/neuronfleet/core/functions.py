"""FleetFunction: how every neuronfleet Lambda runs (Powertools, own log group, DLQ, error alarm)."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from .args import duck
from .assets import lambda_source_dir as lambda_source_dir  # re-exported: where the handler sources are
from .assets import stage
from .lookups import days, minutes, service_principal
from .nag import acknowledge, acknowledge_wildcards
from .pseudo import pseudo

RUNTIME = lambda_.Runtime.PYTHON_3_13
POWERTOOLS_LAYER = "AWSLambdaPowertoolsPythonV3-python313-x86_64"
POWERTOOLS_LAYER_VERSION = 36
"""AWS's public Powertools for AWS Lambda (Python) layer (account 017000801446), pinned."""

EVENT_RETRY_ATTEMPTS = 4
EVENT_MAX_AGE = Duration.hours(1)
"""EventBridge target retries: a capacity or alarm event older than an hour is stale; it goes to the DLQ."""


class FleetFunction(Construct):
    """A Python Lambda from the kit's handler sources (its asset: the handler's package, e.g. ``failover`` of
    ``failover.handler.handler``, with neuronfleet_contract and neuronfleet_runtime; see ``_assets``), with the
    Powertools layer, a role that may write only its own log group, a log group of its own (kept ``log_retention``;
    destroyed with the stack unless ``log_removal_policy`` says otherwise), an encrypted TLS-only
    dead-letter queue (for failed async invocations and for events EventBridge could not deliver, see
    :meth:`event_target`), and (given a topic) an alarm on its errors and one on its dead letters.

    Example::

        fn = FleetFunction(self, "Failover", handler="failover.handler.handler",
                           description="...", environment={"X": "y"}, topic=alerts.topic)
        fn.function; fn.role; fn.dead_letter_queue; fn.errors_alarm; fn.dead_letters_alarm
        events.Rule(self, "Every5Minutes", schedule=..., targets=[fn.event_target()])
    """

    def __init__(self, scope: Construct, construct_id: str, *, handler: str, description: str,
                 environment: Mapping[str, str] | None = None, timeout: Duration | None = None,
                 memory_size: int = 256, topic: sns.ITopic | None = None,
                 log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
                 reserved_concurrent_executions: int | None = None,
                 log_removal_policy: RemovalPolicy = RemovalPolicy.DESTROY, vpc: ec2.IVpc | None = None,
                 vpc_subnets: ec2.SubnetSelection | None = None,
                 security_groups: list[ec2.ISecurityGroup] | None = None) -> None:
        """``topic``: where the error and dead-letter alarms notify.
        ``vpc``: run in the VPC (``vpc_subnets``, ``security_groups``), for a function that calls a private
        endpoint; the role then gets AWS's Lambda VPC access policy (its network interfaces), acknowledged."""
        super().__init__(scope, construct_id)
        if topic is not None:
            duck("topic", topic, "topic_arn", "an sns.ITopic", what="FleetFunction")
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=log_removal_policy)
        self.role = iam.Role(self, "Role", assumed_by=service_principal("lambda.amazonaws.com"),
                             description=f"{description} (least privilege)")
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[f"{self.log_group.log_group_arn}"]))
        self.dead_letter_queue = sqs.Queue(self, "DeadLetters", enforce_ssl=True,
                                           encryption=sqs.QueueEncryption.SQS_MANAGED,
                                           retention_period=days(14))
        Validations.of(self.dead_letter_queue).acknowledge(Acknowledgment(
            id="AwsSolutions-SQS3", reason="This queue is the function's dead-letter queue; it needs none itself"))
        powertools = lambda_.LayerVersion.from_layer_version_arn(
            self, "Powertools",
            f"arn:{pseudo().partition}:lambda:{pseudo().region}:017000801446:layer:{POWERTOOLS_LAYER}:{POWERTOOLS_LAYER_VERSION}")
        self.function = lambda_.Function(
            self, "Function", runtime=RUNTIME, handler=handler, description=description,
            code=lambda_.Code.from_asset(str(stage(handler.split(".")[0]))),
            layers=[powertools], role=self.role, log_group=self.log_group,
            timeout=timeout or minutes(1), memory_size=memory_size,
            dead_letter_queue=self.dead_letter_queue, reserved_concurrent_executions=reserved_concurrent_executions,
            environment={"POWERTOOLS_LOG_LEVEL": "INFO", **(environment or {})},
            vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups,
        )
        if vpc is not None:
            Validations.of(self.role).acknowledge(Acknowledgment(
                id="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                   "AWSLambdaVPCAccessExecutionRole]",
                reason="aws-cdk-lib gives a function in a VPC AWS's managed policy for its network interfaces"))
        cfn_function = self.function.node.default_child
        assert isinstance(cfn_function, lambda_.CfnFunction)
        cfn_function.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}, "reason": (
            "CDK makes the function depend on its role and that role's policy on purpose: the policy must exist "
            "before the first invocation; the redundant role dependency is CDK's, harmless")})
        acknowledge_wildcards(self.role, "Writes its own log group's streams only",
                              resources=(self.log_group.log_group_arn,))
        # the compliance packs' and checkov's findings the kit keeps (core.nag.ACKNOWLEDGED has each reason)
        acknowledge(self, "IAMNoInlinePolicy", "CloudWatchLogGroupEncrypted",
                    *(("LambdaConcurrency",) if reserved_concurrent_executions is None else ()),
                    *(("LambdaInsideVPC",) if vpc is None else ()))
        acknowledge(cfn_function, "CKV_AWS_173", *(("CKV_AWS_115",) if reserved_concurrent_executions is None else ()),
                    *(("CKV_AWS_117",) if vpc is None else ()))
        acknowledge(self.log_group, "CKV_AWS_158")
        acknowledge(self.dead_letter_queue, "CKV_AWS_27")
        Validations.of(self.function).acknowledge(Acknowledgment(
            id="AwsSolutions-L1", reason=f"Pinned to {RUNTIME.name}, the newest runtime AWS's Powertools layer "
                                         f"{POWERTOOLS_LAYER}:{POWERTOOLS_LAYER_VERSION} is built for"))
        self.errors_alarm: cloudwatch.Alarm | None = None
        self.dead_letters_alarm: cloudwatch.Alarm | None = None
        if topic is not None:
            self.dead_letters_alarm = self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=minutes(5), statistic="Maximum").create_alarm(
                self, "DeadLettersAlarm", threshold=1, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{description}: events or invocations it could not take are waiting in "
                                  "its dead-letter queue (read them, fix the cause, re-drive)")
            action = cw_actions.SnsAction(topic)
            self.dead_letters_alarm.add_alarm_action(action)
            self.errors_alarm = self.function.metric_errors(period=minutes(5)).create_alarm(
                self, "ErrorsAlarm", threshold=1, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{description}: invocation errors")
            self.errors_alarm.add_alarm_action(action)

    def event_target(self, *, retry_attempts: int = EVENT_RETRY_ATTEMPTS,
                     max_event_age: Duration = EVENT_MAX_AGE) -> targets.LambdaFunction:
        """This function as an EventBridge target: retried, and what EventBridge still cannot deliver lands in
        the function's dead-letter queue (watched by :attr:`dead_letters_alarm`) rather than being dropped."""
        return targets.LambdaFunction(self.function, retry_attempts=retry_attempts, max_event_age=max_event_age,
                                      dead_letter_queue=self.dead_letter_queue)

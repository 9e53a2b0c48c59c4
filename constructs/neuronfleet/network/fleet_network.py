"""FleetNetwork: the VPC every neuronfleet part runs in."""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import Acknowledgment, RemovalPolicy, Stack, Token, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..core.args import settings_argument
from ..core.nag import acknowledge
from ..core.problems import InvalidSettings, Problem
from ..core.region import check_in_region
from ..facts.catalog import LOG_RETENTION_DAYS
from ..settings import Capacity, NetworkSettings

INTERFACE_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    # Session Manager (no SSH, no bastion)
    "Ssm": ec2.InterfaceVpcEndpointAwsService.SSM,
    "SsmMessages": ec2.InterfaceVpcEndpointAwsService.SSM_MESSAGES,
    "Ec2Messages": ec2.InterfaceVpcEndpointAwsService.EC2_MESSAGES,
    # The ECS agent on every AWS Batch container instance registers, takes tasks and reports through these
    # three; without them, in isolated subnets, instances launch (and bill) while jobs stay RUNNABLE. AWS's
    # ECS guide, "Amazon ECS interface VPC endpoints (AWS PrivateLink)": "You must have the following
    # Region-specific VPC endpoints: ecs-agent, ecs-telemetry, ecs"
    # (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/vpc-endpoints.html, read 2026-11-22).
    "Ecs": ec2.InterfaceVpcEndpointAwsService.ECS,
    "EcsAgent": ec2.InterfaceVpcEndpointAwsService.ECS_AGENT,
    "EcsTelemetry": ec2.InterfaceVpcEndpointAwsService.ECS_TELEMETRY,
    # container images (Batch jobs, Neuron DLCs); layers come through the S3 gateway endpoint
    "EcrApi": ec2.InterfaceVpcEndpointAwsService.ECR,
    "EcrDocker": ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER,
    # CloudWatch Logs (the jobs' awslogs driver, the CloudWatch agent) and metrics (neuron-monitor)
    "Logs": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
    "Monitoring": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING,
    # regional STS: job code that assumes roles (AWS SDKs default to the regional endpoint)
    "Sts": ec2.InterfaceVpcEndpointAwsService.STS,
}
"""Interface endpoints created by ``interface_endpoints=True``, by construct id. With the S3 gateway endpoint
(always created) they are what AWS Batch container instances need in isolated subnets (``nat_gateways: 0``);
``NetworkSettings.reaches_aws_apis`` says whether the compute subnets have them or a NAT."""

AWS_OWNED_BUCKETS: dict[str, tuple[str, bool, str]] = {
    "ECR image layers": ("prod-{region}-starport-layer-bucket", True, (
        "ECR user guide, 'Amazon ECR interface VPC endpoints', Minimum Amazon S3 bucket permissions for Amazon ECR: "
        "s3:GetObject on arn:aws:s3:::prod-region-starport-layer-bucket/* "
        "(https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html, read 2026-11-23). The Neuron "
        "DLCs are ECR images too (account 763104351884): their layers come from the same bucket")),
    "Amazon Linux 2023 packages": ("al2023-repos-{region}-*", False, (
        "the host installs lustre-client with dnf: AL2023's repositories are S3 buckets named "
        "al2023-repos-<region>-de612dc2, as dnf repolist -v shows on an instance (shamimice03/aws-secure-env README, "
        "read 2026-11-23); no AWS page read here names them, so the pattern allows the prefix for GetObject only")),
}
"""AWS-owned buckets the S3 gateway endpoint must still reach for any principal (image layers are fetched with URLs
ECR signs, packages anonymously): name pattern, whether AWS documents it, and the source. The gateway endpoint takes
every in-region S3 request of the VPC, NAT or not, so its policy applies to both."""

_R = logs.RetentionDays
RETENTION_BY_DAYS: dict[int, logs.RetentionDays] = dict(zip(LOG_RETENTION_DAYS, (
    _R.ONE_DAY, _R.THREE_DAYS, _R.FIVE_DAYS, _R.ONE_WEEK, _R.TWO_WEEKS, _R.ONE_MONTH, _R.TWO_MONTHS,
    _R.THREE_MONTHS, _R.FOUR_MONTHS, _R.FIVE_MONTHS, _R.SIX_MONTHS, _R.ONE_YEAR, _R.THIRTEEN_MONTHS,
    _R.EIGHTEEN_MONTHS, _R.TWO_YEARS, _R.THREE_YEARS, _R.FIVE_YEARS, _R.SIX_YEARS, _R.SEVEN_YEARS,
    _R.EIGHT_YEARS, _R.NINE_YEARS, _R.TEN_YEARS,
), strict=True))
"""CloudWatch Logs retention periods by their length in days."""

COMPUTE_SUBNETS = "compute"
PUBLIC_SUBNETS = "public"


class FleetNetwork(Construct):
    """A VPC with private compute subnets in every AZ and the training subnet in the capacity's AZ.

    Training instances on reserved capacity (Capacity Blocks, ODCRs) must launch in the one AZ that
    holds the reservation: :attr:`training_subnet` is the compute subnet of ``training_az``.

    Example::

        net = FleetNetwork(self, "Network", settings=NetworkSettings(
            availability_zones=["us-east-2a", "us-east-2b"], training_az="us-east-2b"))
        net.vpc; net.training_subnet; net.compute_subnets
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: NetworkSettings,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> None:
        """``removal_policy``: what deleting the stack does to the flow-log group (RETAIN unless asked)."""
        super().__init__(scope, construct_id)
        settings = settings_argument(settings, NetworkSettings, what="FleetNetwork")
        check_in_region(self, settings.what, settings.region_problems)
        _check_no_az_lookup(self, settings.availability_zones)
        self.settings = settings
        self.removal_policy = removal_policy
        self.vpc = self._vpc(settings)
        _ack_named_azs(self.vpc)
        self._acknowledge()
        self._subnets_by_az: dict[str, ec2.ISubnet] = {}
        self.compute_subnets = ec2.SubnetSelection(subnet_group_name=COMPUTE_SUBNETS)
        """Private subnets in every AZ (endpoints, Lambdas, GPU pool)."""
        self.training_subnet: ec2.ISubnet = self.subnet_in(settings.training_az)
        """The compute subnet in ``training_az``: where training instances launch unless their capacity names
        another AZ (see :meth:`training_subnet_for`)."""
        self.training_subnets = ec2.SubnetSelection(subnets=[self.training_subnet])
        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        self.endpoint_security_group: ec2.SecurityGroup | None = None
        if settings.interface_endpoints:
            self._add_interface_endpoints(settings.cidr)
        self._scope_endpoint_policies()

    def subnet_in(self, availability_zone: str) -> ec2.ISubnet:
        """The compute subnet in ``availability_zone`` (one of the network's AZs, else InvalidSettings)."""
        if availability_zone not in self.settings.availability_zones:
            raise InvalidSettings([Problem("availability_zone", availability_zone, "one of the network's AZs: "
                                           + ", ".join(self.settings.availability_zones))], what=self.settings.what)
        subnet = self._subnets_by_az.get(availability_zone)
        if subnet is None:
            subnet = self._subnets_by_az[availability_zone] = self.vpc.select_subnets(
                subnet_group_name=COMPUTE_SUBNETS, availability_zones=[availability_zone]).subnets[0]
        return subnet

    def training_subnet_for(self, capacity: Capacity) -> ec2.ISubnet:
        """Where a cluster on ``capacity`` launches: the subnet of the reservation's AZ when it names one (Capacity
        Blocks and ODCRs live in one AZ each, and a large fleet buys them in several), else ``training_az``'s."""
        problems = list(self.settings.capacity_az_problems(capacity.availability_zone))
        if problems:
            raise InvalidSettings(problems, what="training cluster")
        return self.subnet_in(capacity.availability_zone or self.settings.training_az)

    def require_aws_api_access(self, what: str) -> None:
        """Raise InvalidSettings naming ``what`` when the compute subnets reach neither a NAT gateway nor the
        interface endpoints that AWS Batch container instances (the ECS agent) and image pulls need."""
        problems = list(self.settings.aws_api_access_problems(what))
        if problems:
            raise InvalidSettings(problems, what=self.settings.what)

    def _vpc(self, settings: NetworkSettings) -> ec2.Vpc:
        nat_gateways = settings.nat_gateways
        subnets = [
            ec2.SubnetConfiguration(
                name=COMPUTE_SUBNETS,
                subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS if nat_gateways else ec2.SubnetType.PRIVATE_ISOLATED,
            ),
        ]
        if nat_gateways:
            subnets.insert(0, ec2.SubnetConfiguration(name=PUBLIC_SUBNETS, subnet_type=ec2.SubnetType.PUBLIC,
                                                      cidr_mask=24))

        self.flow_log_group = logs.LogGroup(
            self, "FlowLogs", retention=RETENTION_BY_DAYS[settings.flow_logs_retention_days],
            removal_policy=self.removal_policy)
        return ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(settings.cidr),
            availability_zones=list(settings.availability_zones),
            nat_gateways=nat_gateways,
            subnet_configuration=subnets,
            # The default SG keeps AWS's rules: closing it needs a Lambda-backed custom resource, which
            # this kit avoids. Nothing of neuronfleet relies on the default security group: every Batch compute
            # environment names its EFA group, which MNP task interfaces take (see compute.batch_compute_environment).
            restrict_default_security_group=False,
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(self.flow_log_group),
                    traffic_type=ec2.FlowLogTrafficType.ALL,
                )
            },
            gateway_endpoints={"S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)},
        )

    def _acknowledge(self) -> None:
        """The compliance packs' and checkov's findings the network keeps (core.nag.ACKNOWLEDGED has each reason):
        the default security group left open (see :meth:`_vpc`), the NAT gateways' public subnets, the flow logs'
        group (no customer key)."""
        vpc = self.vpc.node.default_child
        assert vpc is not None
        acknowledge(vpc, "VPCDefaultSecurityGroupClosed")
        for subnet in self.vpc.public_subnets:
            acknowledge(subnet, "VPCSubnetAutoAssignPublicIpDisabled", "VPCNoUnrestrictedRouteToIGW")
        acknowledge(self.flow_log_group, "CloudWatchLogGroupEncrypted", "CKV_AWS_158")

    def _add_interface_endpoints(self, cidr: str) -> None:
        # One group for all interface endpoints: HTTPS from inside the VPC only (the CIDR as given,
        # so reviewers and cdk-nag see the literal range, not an unresolved attribute).
        self.endpoint_security_group = ec2.SecurityGroup(
            self, "EndpointSecurityGroup", vpc=self.vpc, allow_all_outbound=False,
            description="VPC interface endpoints: HTTPS from inside the VPC",
        )
        self.endpoint_security_group.add_ingress_rule(
            ec2.Peer.ipv4(cidr), ec2.Port.tcp(443), "HTTPS from inside the VPC"
        )
        for endpoint_id, service in INTERFACE_ENDPOINTS.items():
            self.interface_endpoints[endpoint_id] = self.vpc.add_interface_endpoint(
                endpoint_id, service=service, subnets=self.compute_subnets, private_dns_enabled=True,
                security_groups=[self.endpoint_security_group], open=False,
            )


    def _scope_endpoint_policies(self) -> None:
        """Endpoint policies that let through only this account's principals (``aws:PrincipalAccount``, a global
        condition key every authenticated request carries: AWS PrivateLink guide, "Control access to VPC endpoints
        using endpoint policies"), so credentials of another account cannot be used through the VPC's endpoints. The
        S3 gateway endpoint also lets anyone read the AWS-owned buckets of :data:`AWS_OWNED_BUCKETS`.

        Not scoped by ``aws:ResourceAccount``: the kit's principals legitimately reach resources of other accounts
        (AWS's Neuron DLC repositories in account 763104351884, a model artifact in another account's bucket), and
        an endpoint policy cannot tell those from a bucket outside the organisation; bucket policies and SCPs can."""
        account = Stack.of(self).account
        own = iam.PolicyStatement(principals=[iam.AnyPrincipal()], actions=["*"], resources=["*"],
                                  conditions={"StringEquals": {"aws:PrincipalAccount": account}})
        self.s3_endpoint = self.vpc.node.find_child("S3")
        assert isinstance(self.s3_endpoint, ec2.GatewayVpcEndpoint)
        self.s3_endpoint.add_to_policy(own)
        region = Stack.of(self).region
        partition = Stack.of(self).partition
        self.s3_endpoint.add_to_policy(iam.PolicyStatement(
            principals=[iam.AnyPrincipal()], actions=["s3:GetObject"],
            resources=[f"arn:{partition}:s3:::{name.format(region=region)}/*"
                       for name, _, _ in AWS_OWNED_BUCKETS.values()]))
        for endpoint in self.interface_endpoints.values():
            endpoint.add_to_policy(own)


AZ_LOOKUP_KEY = "availability-zones:account={account}:region={region}"
"""The context key under which CDK keeps the ``availability-zones`` lookup of an environment-specific stack
(aws-cdk-lib ContextProvider: provider name, then the sorted props)."""
AZ_LOOKUP_PLACEHOLDER = ["dummy1a", "dummy1b", "dummy1c"]
"""What aws-cdk-lib's ``Stack.availability_zones`` answers while the lookup is missing (its ``dummyValue``; the CLI
then runs the lookup, which needs credentials). Pinned by tests/constructs/test_api.py."""


def _check_no_az_lookup(scope: Construct, availability_zones: Sequence[str]) -> None:
    """Refuse, with the way out, a VPC that would make its stack look up the region's AZs: an environment-specific
    stack whose ``availability_zones`` is still CDK's placeholder (the lookup is missing; StaticAzStack answers
    itself). Without this, synth without credentials ends in the CLI's "no credentials" error after its retries,
    naming nothing of the kit. Reads no context itself: it asks the stack, as ec2.Vpc is about to."""
    stack = Stack.of(scope)
    if Token.is_unresolved(stack.account) or Token.is_unresolved(stack.region):
        return  # environment-agnostic: Fn::GetAZs, no lookup
    if list(stack.availability_zones) != AZ_LOOKUP_PLACEHOLDER:
        return
    key = AZ_LOOKUP_KEY.format(account=stack.account, region=stack.region)
    raise InvalidSettings([Problem("stack", f"{type(stack).__name__} {stack.node.path!r}", (
        "a neuronfleet.StaticAzStack(app, ..., availability_zones=[...], env=...) for an environment-specific stack: "
        "a VPC that names AZs makes a plain Stack look its region's AZs up (credentials at synth); or put the lookup's "
        f"answer in cdk.context.json: {json.dumps({key: list(availability_zones)})}"))], what="FleetNetwork")


_NAMED_AZ_REASON = "AZs are named on purpose: reserved capacity (Capacity Blocks, ODCRs) lives in one named AZ"


def _ack_named_azs(vpc: ec2.Vpc) -> None:
    """Acknowledge W3010 (hard-coded AZ) on the subnets only, for CDK's validator and for cfn-lint."""
    Validations.of(vpc).acknowledge(Acknowledgment(id="CloudFormation-Validate::W3010", reason=_NAMED_AZ_REASON))
    for subnet in [*vpc.public_subnets, *vpc.private_subnets, *vpc.isolated_subnets]:
        cfn = subnet.node.default_child
        assert isinstance(cfn, ec2.CfnSubnet)
        cfn.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3010"]}, "reason": _NAMED_AZ_REASON})


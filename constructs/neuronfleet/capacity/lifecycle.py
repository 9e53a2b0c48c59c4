"""CapacityLifecycle: a fleet's Capacity Blocks looked after before they end (extend, or drain), interconnect health,
and jobs held for Trainium capacity moved to the GPU pool (lambdas/capacity_lifecycle)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from neuronfleet_contract import capacity_alert as alert_contract
from neuronfleet_contract.capacity_lifecycle import (
    ClusterRef,
    LifecycleConfig,
    NodegroupRef,
    drain_key,
    policy_parameter_name,
)
from neuronfleet_contract.tags import FLEET_TAG

from ..alerts.announcement_ledger import AnnouncementLedger
from ..alerts.topic import grant_publish
from ..core.functions import FleetFunction
from ..core.nag import acknowledge_wildcards
from ..core.rules import LAMBDA_ENVIRONMENT_BYTES, REFERENCE_CHARS, longest_arn
from ..fallback.gpu_pool import GpuPool
from ..settings.capacity import CapacityPolicySettings
from ..settings.eks import NeuronNodegroupSettings
from ..training.cluster import TrainiumCluster
from .iam import any_reservation, extension_statements


@dataclass(frozen=True)
class CapacityBlockNodegroup:
    """A Capacity Block node group of a :class:`neuronfleet.eks.NeuronEksCluster`, as :class:`CapacityLifecycle`
    takes it (``node_groups=``): scaled out when its blocks are active, told to checkpoint through
    its drain flag (``drain_key(name)`` in ``drain_bucket``) and scaled in before its blocks' instances stop
    (docs/eks.md, "Capacity Block node groups follow their blocks"). Here, not in eks/ (which builds it:
    ``NeuronEksCluster.lifecycle_targets``), because capacity/ sits below eks/ (docs/layout.md, "What may import
    what"); neuronfleet.eks.cluster re-exports it."""

    name: str
    """The node group's name in the fleet file (its drain flag's name)."""
    cluster: eks.Cluster
    nodegroup: eks.Nodegroup
    settings: NeuronNodegroupSettings
    drain_bucket: s3.IBucket
    """The data bucket the cluster's training pods read through FSx for Lustre (/fsx/data)."""


PASS_EVERY = Duration.minutes(10)
"""The lifecycle pass: a block's decision point, a drain's start or a held job's limit is acted on at most 10
minutes late (the checkpoint lead, 45 minutes by default, leaves room for it)."""
TIMEOUT = Duration.minutes(5)
DESCRIPTION = "neuronfleet: Capacity Blocks before they end (extend or drain), held jobs to the GPU pool"

# ---------------------------------------------------------------------------------------- one environment's size
# A fleet's clusters are split between as many lifecycle functions as their environments need (Lambda refuses an
# environment over LAMBDA_ENVIRONMENT_BYTES). What CloudFormation will put where the template holds a reference is
# not known at synth, so each reference is sized as the longest value AWS allows there: a function never outgrows
# Lambda's quota whatever names CloudFormation generates. Read 2026-11-26.

LONGEST = {
    "queue_arn": REFERENCE_CHARS[("AWS::Batch::JobQueue", "JobQueueArn")],
    "drain_bucket": REFERENCE_CHARS[("AWS::S3::Bucket", "Ref")],
    "topic_arn": REFERENCE_CHARS[("AWS::SNS::Topic", "Ref")],
    "ledger_table": REFERENCE_CHARS[("AWS::DynamoDB::Table", "Ref")],
    "gpu_queue_arn": REFERENCE_CHARS[("AWS::Batch::JobQueue", "JobQueueArn")],
    "gpu_job_definition": longest_arn("batch", "job-definition/", 128) + len(":") + len(str(2**31 - 1)),
    "eks_cluster": 100,
    "nodegroup": 256,
}
"""The longest deployed value of each setting a reference fills (neuronfleet.core.rules.REFERENCE_CHARS, with
sources: a job queue's ARN, a bucket's name, a topic's ARN, a table's name); a job definition's Ref is its ARN with
the revision: a name "up to 128 letters" (botocore 1.44.5 batch RegisterJobDefinition jobDefinitionName) and a revision
that is an Integer (the same model's JobDefinition revision: at most 2**31 - 1, ten digits). An EKS cluster's name
"can't be longer than 100 characters" (botocore 1.44.5 eks CreateCluster name, shape ClusterName max 100); a node
group's name has no bound in that model (CreateNodegroup nodegroupName: a String): 256 is assumed, more than any name
CloudFormation generates."""
OWN_VARIABLES_BYTES = 64
"""Room kept for the variables FleetFunction adds of its own (POWERTOOLS_LOG_LEVEL=INFO: 24 bytes)."""
ENVIRONMENT_BUDGET = LAMBDA_ENVIRONMENT_BYTES - OWN_VARIABLES_BYTES
_TOKEN = re.compile(r"\$\{Token\[[^\]]*\]\}")
_PARAMETER_SAFE = re.compile(r"[A-Za-z0-9_.-]+")
SSM_STANDARD_VALUE_BYTES = 4096
"""A standard SSM parameter's value holds at most 4 KB (botocore 1.44.5 ssm PutParameter Value: 'Standard parameters
have a value limit of 4 KB'; pinned by tests/constructs/test_capacity_lifecycle.py)."""


def _longest(value: str, chars: int) -> str:
    """``value`` with each unresolved reference in it as ``chars`` characters."""
    return _TOKEN.sub("x" * chars, value)


def environment_bytes(settings: LifecycleConfig) -> int:
    """The most bytes ``settings`` can take of a function's environment once deployed (keys and values, references
    at :data:`LONGEST`; compact JSON, as ``Stack.to_json_string`` renders it)."""
    sized = replace(
        settings, topic_arn=_longest(settings.topic_arn, LONGEST["topic_arn"]),
        ledger_table=_longest(settings.ledger_table, LONGEST["ledger_table"]),
        gpu_queue_arn=_longest(settings.gpu_queue_arn, LONGEST["gpu_queue_arn"]),
        gpu_job_definitions=tuple(_longest(d, LONGEST["gpu_job_definition"]) for d in settings.gpu_job_definitions),
        clusters=tuple(replace(c, queue_arn=_longest(c.queue_arn, LONGEST["queue_arn"]),
                               drain_bucket=_longest(c.drain_bucket, LONGEST["drain_bucket"]))
                       for c in settings.clusters),
        node_groups=tuple(replace(g, cluster=_longest(g.cluster, LONGEST["eks_cluster"]),
                                  nodegroup=_longest(g.nodegroup, LONGEST["nodegroup"]),
                                  drain_bucket=_longest(g.drain_bucket, LONGEST["drain_bucket"]))
                          for g in settings.node_groups))
    env = sized.to_environment(to_json=lambda v: json.dumps(v, separators=(",", ":")))
    return sum(len(k.encode()) + len(v.encode()) for k, v in env.items())


def split_clusters(clusters: Sequence[ClusterRef], settings: Callable[[tuple[ClusterRef, ...]], LifecycleConfig],
                   *, budget: int = ENVIRONMENT_BUDGET) -> list[tuple[ClusterRef, ...]]:
    """``clusters`` in order, in consecutive parts each filled as far as it fits: each part's ``settings(part)`` takes
    at most ``budget`` bytes (:func:`environment_bytes`). Every cluster is in exactly one part; a cluster added at
    the end of the fleet file changes only the last part. ValueError naming the cluster when one alone does not
    fit."""
    parts: list[tuple[ClusterRef, ...]] = []
    current: tuple[ClusterRef, ...] = ()
    for c in clusters:
        if environment_bytes(settings((*current, c))) <= budget:
            current = (*current, c)
            continue
        alone = environment_bytes(settings((c,)))
        if alone > budget:
            raise ValueError(f"clusters[{c.name!r}]: got a cluster whose lifecycle settings alone take {alone:,} bytes "
                             f"of environment; allowed: at most {budget:,} (Lambda's {LAMBDA_ENVIRONMENT_BYTES:,} "
                             "with room for the function's own variables): fewer reservation ids or groups")
        if current:
            parts.append(current)
        current = (c,)
    return [*parts, current] if current else parts


class CapacityLifecycle(Construct):
    """Looks after the fleet's Capacity Blocks with its ``policy`` (CapacityPolicySettings): every 10 minutes and on
    EC2's Capacity Block events, extends a block whose jobs still run (within the policy, bought once), else raises
    the cluster's checkpoint flag (``s3://<data bucket>/neuronfleet/drain/<cluster>.json``) ahead of the stop and
    announces the drain once; announces impaired interconnects once; moves jobs held for capacity past
    ``fallback_after_minutes`` to ``pool`` when they name one of its GPU job definitions (``GpuPool.add_job_definition``:
the role may submit those, by revision ARN, and no other; a job naming another is announced, not moved). See
docs/capacity-blocks.md. EKS Capacity Block node groups (``node_groups``) follow their blocks: scaled out while they
are active, the same flag from the checkpoint lead, scaled in at its deadline (docs/eks.md).

    A fleet whose clusters do not fit one function's environment (Lambda's 4 KB: about six clusters, see
    :func:`split_clusters`) gets several functions, the same handler each with its own clusters (:attr:`parts`),
    its own role, schedule and event rule; all of them share one announcements table (:attr:`ledger`), so what is
    announced or bought once stays once across them. The first function keeps the construct ids of a single one.

    Example::

        CapacityLifecycle(self, "Lifecycle", fleet="nf-prod", clusters=[cluster], topic=alerts.topic, pool=pool,
                          policy=CapacityPolicySettings(max_upfront_fee_usd=20000, max_usd_per_instance_hour=45))
    """

    def __init__(self, scope: Construct, construct_id: str, *, fleet: str,
                 clusters: Mapping[str, TrainiumCluster] | Sequence[TrainiumCluster], topic: sns.ITopic,
                 policy: CapacityPolicySettings, pool: GpuPool | None = None,
                 prices: Mapping[str, Mapping[str, str]] | None = None, training_azs: Sequence[str] = (),
                 node_groups: Sequence[CapacityBlockNodegroup] = ()) -> None:
        """``clusters``: by name (the name in announcements and in the drain flag's key: each cluster's
        ``drain_name``, given when it was built), or a list (named by their ``drain_name``). ``training_azs``: where
        the fleet's training subnets are, when the clusters' capacities name no AZ (the policy's ``availability_zones``
        win when set). ``prices``: the kit's price table by default. The fleet-wide monthly extension budget is the
        policy's ``fleet_extension_budget_usd`` (one home, checked there: the same message from the construct API and
        from a fleet file). ``node_groups``: EKS Capacity Block node groups (``NeuronEksCluster.lifecycle_targets``)
        that follow their blocks: scaled out while their blocks are active, told to checkpoint through their drain
        flag, scaled in at its deadline (the first function looks after them all; ``clusters`` may then be empty)."""
        super().__init__(scope, construct_id)
        if not isinstance(policy, CapacityPolicySettings):
            raise TypeError(f"policy: got {type(policy).__name__}; allowed: CapacityPolicySettings")
        named = dict(clusters) if isinstance(clusters, Mapping) else {c.drain_name: c for c in clusters}
        if not isinstance(clusters, Mapping) and len(named) != len(clusters):
            raise ValueError(f"clusters: got drain names {[c.drain_name for c in clusters]}; allowed: distinct names "
                             "(TrainiumCluster(..., drain_name=...))")
        for name, cluster in named.items():  # its jobs watch the flag this lifecycle writes: the same name
            if cluster.drain_name != name:
                raise ValueError(f"clusters[{name!r}]: got {cluster.node.path}, built with drain_name "
                                 f"{cluster.drain_name!r}; allowed: a cluster built with drain_name={name!r} (its "
                                 "jobs watch the drain flag of that name)")
        if not named and not node_groups:
            raise ValueError("clusters: got none; allowed: at least one TrainiumCluster (the lifecycle looks after "
                             "their Capacity Blocks), or an EKS Capacity Block node group (node_groups=)")
        self.cluster_names = tuple(named)
        groups = _nodegroup_refs(node_groups)
        self.node_group_names = tuple(g.name for g in node_groups)
        """The EKS Capacity Block node groups the first function makes follow their blocks."""
        refs = tuple(ClusterRef(
            name=name, queue_arn=c.job_queue.job_queue_arn, instance_type=c.settings.instance_type,
            drain_bucket=c.data_bucket.bucket_name,
            reservation_ids=(c.settings.capacity.reservation_id,) if c.settings.capacity.reservation_id else (),
            group_arns=(c.settings.capacity.resource_group_arn,) if c.settings.capacity.resource_group_arn else ())
            for name, c in named.items())
        capacities = [c.settings.capacity for c in named.values()] + [g.settings.capacity for g in node_groups]
        azs = sorted({c.availability_zone for c in capacities if c.availability_zone} | set(training_azs))
        if prices is None:
            from ..facts.prices import price_table

            prices = price_table()
        table = prices
        gpu_type = pool.specs[0].instance_type if pool else ""
        # the fleet's GPU job definitions: the only ones a held job may move to, and the only ones the role may submit
        gpu_definitions = tuple(d.job_definition_arn for d in pool.job_definitions.values()) if pool else ()
        self.ledger = AnnouncementLedger(self, "Announced")
        fleet_policy = policy.policy(training_azs=azs)
        if not _PARAMETER_SAFE.fullmatch(fleet):
            raise ValueError(f"fleet: got {fleet!r}; allowed: letters, digits, '-', '_' and '.' (it names the SSM "
                             f"parameter {policy_parameter_name('<fleet>')} the capacity policy is read from)")
        document = fleet_policy.to_json()
        if len(document.encode()) > SSM_STANDARD_VALUE_BYTES:
            raise ValueError(f"capacity_policy: got a policy of {len(document.encode()):,} bytes; allowed: at most "
                             f"{SSM_STANDARD_VALUE_BYTES:,} (an SSM standard parameter's value)")
        self.policy_parameter = ssm.StringParameter(
            self, "Policy", parameter_name=policy_parameter_name(fleet), string_value=document,
            tier=ssm.ParameterTier.STANDARD,
            description=f"neuronfleet {fleet}: the capacity policy the lifecycle functions read (written by the stack)")
        """The capacity policy the functions read each run (the stack writes it; their roles may only read it)."""

        def settings(part: tuple[ClusterRef, ...]) -> LifecycleConfig:
            wanted = {c.instance_type for c in part} | ({gpu_type} if gpu_type else set())
            return LifecycleConfig(
                fleet=fleet, topic_arn=topic.topic_arn, ledger_table=self.ledger.table.table_name,
                policy=fleet_policy, policy_parameter=policy_parameter_name(fleet), clusters=part,
                gpu_queue_arn=pool.job_queue.job_queue_arn if pool else "",
                gpu_instance_type=gpu_type, prices={k: v for k, v in table.items() if k in wanted},
                gpu_job_definitions=gpu_definitions, node_groups=groups)   # sized in every part: kept in the first

        parts = split_clusters(refs, settings) or [()]
        if groups and environment_bytes(settings(parts[0])) > ENVIRONMENT_BUDGET:
            raise ValueError(f"node_groups: got {len(groups)} node groups whose lifecycle settings take "
                             f"{environment_bytes(settings(parts[0])):,} bytes of environment; allowed: at most "
                             f"{ENVIRONMENT_BUDGET:,} (Lambda's {LAMBDA_ENVIRONMENT_BYTES:,} with room for the "
                             "function's own variables): fewer node groups, reservation ids or groups")
        self.parts: tuple[tuple[str, ...], ...] = tuple(tuple(c.name for c in part) for part in parts)
        """The cluster names each function looks after, in the order of :attr:`functions`."""
        self.functions: list[FleetFunction] = []
        self.rules: dict[str, events.Rule] = {}
        """The schedule (``Pass``) and the Capacity Block events (``BlockEvents``) of the first function; ``Pass2``,
        ``BlockEvents2``, ... of the others."""
        for i, part in enumerate(parts):
            n = "" if i == 0 else str(i + 1)
            of = "" if len(parts) == 1 else f" (part {i + 1} of {len(parts)})"
            fn = FleetFunction(
                self, f"Function{n}", handler="capacity_lifecycle.handler.handler", topic=topic, timeout=TIMEOUT,
                description=DESCRIPTION + of,
                environment=(settings(part) if i == 0 else replace(settings(part), node_groups=())).to_environment(
                    to_json=Stack.of(self).to_json_string))
            grant_publish(topic, fn.role)
            self.ledger.grant(fn.role)
            fn.role.add_to_principal_policy(iam.PolicyStatement(  # read the policy: never write it
                actions=["ssm:GetParameter"], resources=[self.policy_parameter.parameter_arn]))
            self.rules[f"Pass{n}"] = events.Rule(
                self, f"Pass{n}", description=f"Capacity Blocks: extend or drain; held jobs (every 10 min){of}",
                schedule=events.Schedule.rate(PASS_EVERY), targets=[fn.event_target()])
            self.rules[f"BlockEvents{n}"] = events.Rule(
                self, f"BlockEvents{n}", description=f"EC2 Capacity Block events: run the lifecycle pass at once{of}",
                event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=[
                    *alert_contract.CAPACITY_BLOCK_ENDING, *alert_contract.CAPACITY_BLOCK_DELIVERED]),
                targets=[fn.event_target()])
            self._grant(fn.role, {c.name: named[c.name] for c in part}, pool, fleet=fleet,
                        extend=policy.allow_extension)
            if i == 0 and node_groups:
                grant_nodegroups(fn.role, node_groups)
            self.functions.append(fn)
        self.function = self.functions[0]
        """The first (for most fleets the only) function."""

    def _grant(self, role: iam.IRole, named: Mapping[str, TrainiumCluster], pool: GpuPool | None, *, fleet: str,
               extend: bool) -> None:
        clusters = list(named.values())
        stack = Stack.of(self)
        describe = ["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlocks", "ec2:DescribeCapacityBlockStatus",
                    "ec2:DescribeCapacityBlockExtensionOfferings", "ec2:DescribeCapacityBlockExtensionHistory",
                    "batch:ListJobs", "batch:DescribeJobs"]
        role.add_to_principal_policy(iam.PolicyStatement(actions=describe, resources=["*"]))
        groups = sorted({c.settings.capacity.resource_group_arn for c in clusters
                         if c.settings.capacity.resource_group_arn})
        wild: list[Any] = ["*"]
        if extend:  # the only spending action, on the fleet's own reservations only (capacity/iam.py, with sources)
            ids = [c.settings.capacity.reservation_id for c in clusters if c.settings.capacity.reservation_id]
            for statement in extension_statements(stack, fleet=fleet, reservation_ids=ids, tagged=bool(groups)):
                role.add_to_principal_policy(statement)
            if groups:
                wild.append(any_reservation(stack))
        if groups:
            role.add_to_principal_policy(iam.PolicyStatement(actions=["resource-groups:ListGroupResources"],
                                                             resources=groups))
        for name, c in named.items():
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],  # GetObject: HeadObject before a delete
                resources=[c.data_bucket.arn_for_objects(drain_key(name))]))
        jobs = stack.format_arn(service="batch", resource="job", resource_name="*")
        wild.append(jobs)
        if pool is not None and pool.job_definitions:   # the pool's own definitions, by revision ARN: never another
            pool.grant_submit_jobs(role)
            role.add_to_principal_policy(iam.PolicyStatement(actions=["batch:CancelJob"], resources=[jobs]))
        acknowledge_wildcards(role, "EC2's Capacity Block describes and Batch's ListJobs/DescribeJobs have no "
                                    "resource-level permissions; extensions only of reservations tagged "
                                    f"{FLEET_TAG}={fleet} (aws:ResourceTag condition: Service Authorization "
                                    "Reference); CancelJob of the held jobs it moves",
                              resources=tuple(wild))


FOLLOW_ACTIONS = ("eks:DescribeNodegroup", "eks:UpdateNodegroupConfig")
"""What the lifecycle does to a Capacity Block node group, on that node group's ARN only (resource type ``nodegroup``:
Service Authorization Reference, Amazon Elastic Kubernetes Service, https://docs.aws.amazon.com/service-authorization/
latest/reference/list_amazonelastickubernetesservice.html, read 2026-11-29; NodegroupCapacityAlerts grants
DescribeNodegroup the same way)."""


def _nodegroup_refs(node_groups: Sequence[CapacityBlockNodegroup]) -> tuple[NodegroupRef, ...]:
    """The contract's references of ``node_groups`` (ValueError naming a node group that is not on Capacity Blocks,
    or one given twice)."""
    seen: set[tuple[str, str]] = set()
    refs = []
    for i, g in enumerate(node_groups):
        capacity = g.settings.capacity
        if capacity.type != "capacity-block":
            raise ValueError(f"node_groups[{i}] ({g.name}): got capacity {capacity.type!r}; allowed: 'capacity-block' "
                             "(NeuronEksCluster.lifecycle_targets gives only those)")
        key = (g.nodegroup.node.path, g.name)
        if key in seen:
            raise ValueError(f"node_groups[{i}]: got {g.name} ({g.nodegroup.node.path}) twice; allowed: each node "
                             "group once")
        seen.add(key)
        refs.append(NodegroupRef(
            name=g.name, cluster=g.cluster.cluster_name, nodegroup=g.nodegroup.nodegroup_name,
            instance_type=g.settings.instance_type, count=g.settings.count, drain_bucket=g.drain_bucket.bucket_name,
            ultraserver_size=g.settings.spec.ultraserver_size,
            reservation_ids=(capacity.reservation_id,) if capacity.reservation_id else (),
            group_arns=(capacity.resource_group_arn,) if capacity.resource_group_arn else ()))
    return tuple(refs)


def grant_nodegroups(role: iam.IRole, node_groups: Sequence[CapacityBlockNodegroup]) -> None:
    """``role`` may describe and scale exactly ``node_groups`` (:data:`FOLLOW_ACTIONS` on their ARNs), list the
    members of exactly their blocks' resource groups, and write, read and delete each one's drain flag (one object key
    per node group); nothing else of EKS or of their buckets."""
    role.add_to_principal_policy(iam.PolicyStatement(actions=list(FOLLOW_ACTIONS),
                                                     resources=[g.nodegroup.nodegroup_arn for g in node_groups]))
    groups = sorted({g.settings.capacity.resource_group_arn for g in node_groups
                     if g.settings.capacity.resource_group_arn})
    if groups:   # an UltraServer node group's blocks are its resource group's members (adapters.Fleet.blocks)
        role.add_to_principal_policy(iam.PolicyStatement(actions=["resource-groups:ListGroupResources"],
                                                         resources=groups))
    for g in node_groups:
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],  # GetObject: HeadObject before a delete
            resources=[g.drain_bucket.arn_for_objects(drain_key(g.name))]))

"""Compose one fleet's stacks from a validated Fleet: each stack gets its section's settings objects."""

from __future__ import annotations

from functools import cache

from aws_cdk import CfnResource, Environment, Stack
from constructs import Construct

from neuronfleet import Fleet, tag_fleet
from neuronfleet.core.limits import assembly_problems as assembly_problems  # the limits' one home: the library
from neuronfleet.core.limits import template_problems as template_problems
from neuronfleet.core.nag import acknowledge
from neuronfleet.core.rules import CDK_DESCRIPTION_CHARS, CLOUDFORMATION_QUOTAS, fits_description
from neuronfleet.cost.monitors import BatchJob
from neuronfleet.facts.prices import price_table
from neuronfleet.fleetfile.eks_section import EksSection, cluster_settings
from neuronfleet.fleetfile.schema import CUR_EXPORT_PART, construct_id, partition
from neuronfleet.settings import reservations
from neuronfleet.settings.cost import cur_export_region

from .alerts_stack import AlertsStack
from .batch_stack import BatchStack
from .capacity_stack import FOLLOW_ONLY, CapacityStack
from .cost_stack import CostStack, CurExportStack
from .eks_stack import EksTrainingStack
from .fallback_stack import FallbackStack
from .inference_stack import InferenceStack
from .network_stack import NetworkStack
from .training_stack import TrainingStack


def build_fleet(scope: Construct, fleet: Fleet) -> list[Stack]:
    """Add every stack of ``fleet`` to ``scope`` (an App or Stage) and return them in deploy order."""
    env = Environment(account=fleet.account, region=fleet.region)
    label = f"neuronfleet {fleet.name}"
    network = NetworkStack(scope, fleet.stack_name("network"), network=fleet.network, env=env,
                           description=f"{label} ({fleet.phase}): VPC, endpoints, flow logs")
    alerts = AlertsStack(scope, fleet.stack_name("alerts"), emails=fleet.notification_emails, env=env,
                         description=f"{label}: alerts topic")
    topic = alerts.alerts.topic
    stacks: list[Stack] = [network, alerts]
    training = [TrainingStack(scope, fleet.stack_name(f"train-{c.name}"), network=network.network, cluster=c, env=env,
                              description=describe(f"{label}: training cluster {c.name}",
                                                   [f"{c.count} x {c.instance_type}", c.capacity.type]))
                for c in fleet.training_clusters if c.scheduler == "batch"]
    stacks += training
    fallback = None  # built before the EKS stacks: their node-group capacity alerts name its pool
    if fleet.fallback.enabled:
        fallback = FallbackStack(
            scope, fleet.stack_name("fallback"), network=network.network, pool=fleet.fallback, alerts_topic=topic,
            clusters=[t.cluster for t in training], env=env, fleet=fleet.name,
            description=describe(f"{label}: GPU fallback pool and Trainium capacity alerts",
                                 list(fleet.fallback.instance_types)))
    eks = [EksTrainingStack(scope, fleet.stack_name(f"train-{c.name}"), network=network.network, env=env, storage=c,
                            sharing=c.eks.sharing if c.eks else None, alerts_topic=topic, fleet=fleet.name,
                            gpu_pool=fallback.pool if fallback else None,
                            cluster=(ec := cluster_settings(c, c.name, c.eks or EksSection(), fleet.network.training_az)),
                            description=describe(f"{label}: EKS training cluster {c.name}",
                                                 [f"{g.count} x {g.instance_type} ({g.capacity.type})"
                                                  for g in ec.node_groups]))
           for c in fleet.training_clusters if c.scheduler == "eks"]
    stacks += eks
    inference = [InferenceStack(
        scope, fleet.stack_name(part), network=network.network, alerts_topic=topic, env=env, fleet=fleet.name,
        endpoints={construct_id(e.name): e for e in endpoints},
        description=describe(f"{label}: Neuron endpoints", [f"{e.name} ({e.instance_type})" for e in endpoints]))
        for part, endpoints in fleet.inference_partitions().items()]
    stacks += inference
    if fleet.batch_jobs:
        stacks.append(BatchStack(
            scope, fleet.stack_name("batch"), network=network.network, env=env, fleet=fleet.name,
            jobs={construct_id(j.name): j for j in fleet.batch_jobs},
            description=describe(f"{label}: scheduled batch transform jobs",
                                 [f"{j.name} ({j.instance_type})" for j in fleet.batch_jobs])))
    if fallback is not None:
        stacks.append(fallback)
    followed = [t for stack in eks for t in stack.lifecycle_targets]  # EKS Capacity Block node groups: always
    if (fleet.capacity_policy is not None and training) or followed:
        stacks.append(CapacityStack(
            scope, fleet.stack_name("capacity"), fleet_name=fleet.name, policy=fleet.capacity_policy or FOLLOW_ONLY,
            clusters={c.name: t.cluster for c, t in zip([c for c in fleet.training_clusters if c.scheduler == "batch"],
                                                        training, strict=True)} if fleet.capacity_policy else {},
            alerts_topic=topic, pool=fallback.pool if fallback else None, training_azs=[fleet.network.training_az],
            prices=price_table(fleet.catalog, fleet.region, dict(fleet.prices)), env=env, node_groups=followed,
            description=f"{label}: Capacity Blocks before they end (extend or drain), held jobs to the GPU pool"))
    reserved = reservations([*(c.capacity for c in fleet.training_clusters),
                             *(g.capacity for c in fleet.training_clusters if c.eks for g in c.eks.node_groups)])
    if fleet.cost_monitors.enabled:
        cost = CostStack(
            scope, fleet.stack_name("cost"), fleet_name=fleet.name, settings=fleet.cost_monitors,
            catalog=fleet.catalog, price_overrides=dict(fleet.prices), alerts_topic=topic, env=env,
            reservation_ids=reserved[0], reservation_groups=reserved[1],
            judges=[j for stack in inference for j in stack.judges.values()],
            batch_jobs=report_batch_jobs(fleet),
            description=f"{label}: cost monitors (ledger, report, waste, budget, dashboard)")
        stacks.append(cost)
        cur = cost.monitors.cur
        if cur is not None and cur.export is None:  # source athena outside us-east-1: the export has its own stack
            export_region = cur_export_region(fleet.region)
            stacks.append(CurExportStack(
                scope, fleet.stack_name(CUR_EXPORT_PART), analytics=cur,
                env=Environment(account=fleet.account, region=export_region),
                description=f"{label}: CUR 2.0 Data Export ({export_region}, where AWS serves it) into the cost "
                            f"stack's bucket in {fleet.region}"))
    for stack in stacks:
        tag_fleet(stack, fleet=fleet.name, phase=fleet.phase, extra=dict(fleet.tags))
        # every role of the kit has an inline policy of its own, by design: the packs' IAMNoInlinePolicy, kept
        # for the reference app's stacks (neuronfleet.core.nag.ACKNOWLEDGED has the reason), one call per stack
        acknowledge(stack, "IAMNoInlinePolicy")
    if fleet.cost_monitors.enabled:  # the fleet's own stacks, not the whole app (an app may hold several fleets)
        cost.monitors.overhead_from = tuple(stacks)
    # CloudFormation's limits: the app's neuronfleet.CloudFormationLimits (app.py), read by stacks.limits
    return stacks


def report_batch_jobs(fleet: Fleet) -> list[BatchJob]:
    """The fleet file's ``batch_jobs`` as the cost report is told them (CostMonitors ``batch_jobs``): each job's name,
    its model's name in the report (``model_name``, else the job's name: the ``neuronfleet:model`` tag its transform
    jobs carry) and its instance type."""
    return [BatchJob(name=j.name, model=j.report_name, instance_type=j.instance_type) for j in fleet.batch_jobs]


def fitting_partitions(fleet: Fleet, inference: list[InferenceStack]) -> int | None:
    """The fewest ``inference_stacks`` (above the fleet's) whose partitions each hold at most CloudFormation's
    resources per stack: every endpoint's resources counted on the built tree, a partition's own (failover,
    capture bucket, CDK's metadata) taken as the largest any partition has now. None if even one endpoint per
    stack would not fit."""
    names = {construct_id(e.name): e.name for e in fleet.endpoints}
    own = {names[cid]: _resources(endpoint) for stack in inference for cid, endpoint in stack.endpoints.items()}
    shared = max(_resources(stack) + 1 - sum(own[names[cid]] for cid in stack.endpoints) for stack in inference)
    limit = CLOUDFORMATION_QUOTAS["resources"]
    for count in range(fleet.inference_stacks + 1, len(own) + 1):
        sizes: dict[int, int] = {}
        for name, resources in own.items():
            stack = partition(name, count)
            sizes[stack] = sizes.get(stack, 0) + resources
        if max(sizes.values()) + shared <= limit:
            return count
    return None


def _resources(scope: Construct) -> int:
    return sum(_is_resource(type(c)) for c in scope.node.find_all())


def describe(what: str, items: list[str]) -> str:
    """``what (a, b, ...)``, within the description limits of CloudFormation and aws-cdk-lib: items that do not fit
    are counted instead."""
    for shown in range(len(items), -1, -1):
        rest = len(items) - shown
        parts = items[:shown] + ([f"{rest} more"] if rest else [])
        text = f"{what} ({', '.join(parts)})" if parts else what
        if fits_description(text):
            return text
    return what[:CDK_DESCRIPTION_CHARS]


@cache
def _is_resource(kind: type) -> bool:
    """issubclass once per class: isinstance on jsii proxies walks ABC subclass checks for every node."""
    return issubclass(kind, CfnResource)

"""Whether a check of ``neuronfleet verify`` applies to a fleet: each function takes the fleet file and answers ''
when the fleet has the part the check is about, else why not (the check is then not run, and listed as such).
Pure; the one home of these rules for every check."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..fleetfile.schema import Fleet


def batch(fleet: Fleet) -> str:
    return "" if any(c.scheduler == "batch" for c in fleet.training_clusters) else "the fleet has no AWS Batch cluster"


def batch_default_image(fleet: Fleet) -> str:
    if batch(fleet):
        return batch(fleet)
    defaults = [c for c in fleet.training_clusters if c.scheduler == "batch" and c.training_image is None]
    return "" if defaults else "every AWS Batch cluster names its own training image"


def batch_multinode(fleet: Fleet) -> str:
    multi = [c for c in fleet.training_clusters if c.scheduler == "batch" and c.count >= 2]
    return "" if multi else "no AWS Batch cluster has 2 nodes or more (no multi-node job)"


def batch_blocks(fleet: Fleet) -> str:
    blocks = [c for c in fleet.training_clusters if c.scheduler == "batch" and c.capacity.type == "capacity-block"]
    return "" if blocks else "the fleet has no AWS Batch cluster on a Capacity Block"


def blocks(fleet: Fleet) -> str:
    """A Capacity Block is bought for the fleet or trained on: a capacity policy, or a cluster on a block."""
    if fleet.capacity_policy is None and not any(c.capacity.type == "capacity-block" for c in fleet.training_clusters):
        return "the fleet has no capacity_policy and no Capacity Block cluster"
    return ""


def block_clusters(fleet: Fleet) -> str:
    return "" if any(c.capacity.type == "capacity-block" for c in fleet.training_clusters) else \
        "the fleet has no training cluster on a Capacity Block"


def ultraserver_blocks(fleet: Fleet) -> str:
    ultra = [c for c in fleet.training_clusters
             if c.capacity.type == "capacity-block" and c.instance_type.startswith("trn2u.")]
    return "" if ultra else "the fleet has no UltraServer (trn2u) cluster on a Capacity Block"


def lifecycle(fleet: Fleet) -> str:
    if fleet.capacity_policy is None or not fleet.training_clusters:
        return "the fleet has no capacity_policy (no capacity stack, no lifecycle function)"
    return ""


def extensions(fleet: Fleet) -> str:
    if lifecycle(fleet):
        return lifecycle(fleet)
    assert fleet.capacity_policy is not None
    return "" if fleet.capacity_policy.allow_extension else \
        "the capacity_policy does not allow extensions (the lifecycle function extends nothing)"


def extension_by_tag(fleet: Fleet) -> str:
    if extensions(fleet):
        return extensions(fleet)
    if not any(c.capacity.type == "capacity-block" and c.capacity.resource_group_arn for c in fleet.training_clusters):
        return ("no Capacity Block cluster draws from a resource group: the extension right names the reservations "
                "by ARN, with no tag condition")
    return ""


def gpu_move(fleet: Fleet) -> str:
    policy = fleet.capacity_policy
    if policy is None or policy.fallback_after_minutes is None or not fleet.fallback.enabled:
        return "the fleet moves no held job to the GPU pool (capacity_policy.fallback_after_minutes and fallback)"
    return ""


def gpu_pool(fleet: Fleet) -> str:
    return "" if fleet.fallback.enabled else "the fleet has no GPU pool (fallback)"


def athena(fleet: Fleet) -> str:
    monitors = fleet.cost_monitors
    if not monitors.enabled or monitors.source != "athena":
        return "the fleet reads spend from Cost Explorer (no Data Export)"
    return ""


def endpoints(fleet: Fleet) -> str:
    return "" if fleet.endpoints else "the fleet has no endpoint"


def judged(fleet: Fleet) -> str:
    return "" if any(e.judge is not None for e in fleet.endpoints) else "no endpoint of the fleet has a pilot judge"


def shadowed(fleet: Fleet) -> str:
    shadowed = [e for e in fleet.endpoints if e.gpu_variant is not None and e.gpu_variant.shadow]
    return "" if shadowed else "no endpoint of the fleet has a shadow GPU variant"


def cutover(fleet: Fleet) -> str:
    return "" if any(e.cutover is not None for e in fleet.endpoints) else "no endpoint of the fleet has a cutover"


def gpu_standby(fleet: Fleet) -> str:
    live = [e for e in fleet.endpoints if e.gpu_variant is not None and not e.gpu_variant.shadow]
    return "" if live else "no endpoint of the fleet has a live GPU variant"


def failover(fleet: Fleet) -> str:
    live = [e for e in fleet.endpoints if e.gpu_variant is not None and not e.gpu_variant.shadow and e.failover]
    return "" if live else "no endpoint has a failover (a live GPU variant with failover on)"


def staged(fleet: Fleet) -> str:
    return "" if any(e.stages_hub_models for e in fleet.endpoints) else \
        "no endpoint copies a gated hub model (hf_token_secret_arn with a named container)"


def eks(fleet: Fleet) -> str:
    return "" if any(c.scheduler == "eks" for c in fleet.training_clusters) else "the fleet has no EKS cluster"


def sharing(fleet: Fleet) -> str:
    pools = [c for c in fleet.training_clusters if c.scheduler == "eks" and c.eks is not None and c.eks.sharing]
    return "" if pools else "the fleet has no shared pool (eks.sharing)"


def placement(fleet: Fleet) -> str:
    """Whether an EKS cluster of the fleet has a placement queue: an UltraServer node group on the device plugin that
    no sharing pool shares (NeuronEksCluster.placement_queues; the pool shares SharingSettings.shared_node_group)."""
    from ..eks.manifests import places_whole_ultraservers
    from ..fleetfile.eks_section import EksSection, cluster_settings

    for c in fleet.training_clusters:
        if c.scheduler != "eks":
            continue
        section = c.eks or EksSection()
        settings = cluster_settings(c, c.name, section, fleet.network.training_az)
        groups = settings.node_groups
        shared = {section.sharing.shared_node_group(settings)} if section.sharing else set()
        if any(places_whole_ultraservers(g) and g.name not in shared for g in groups):
            return ""
    return ("no EKS node group has a placement queue (an UltraServer node group on the device plugin outside a "
            "sharing pool; a DRA one takes one UltraServer per Job, not queued)")

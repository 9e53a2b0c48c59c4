"""Settings of :class:`neuronfleet.NeuronEksCluster`: the cluster, its Neuron node groups, its pinned charts.

Rules that span fields live here, shared by the construct API and the fleet file (``training_clusters[].eks``):
a Capacity Block or ODCR node group in more than one AZ, an UltraServer node group that is not whole UltraServers,
DRA beside the device plugin on one node group, a Kubernetes version the pinned kubectl layer does not serve, a chart
version the kit has not recorded. No aws-cdk-lib import here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from ..core import rules
from ..core.problems import Problem
from ..facts.catalog import CATALOG, AcceleratorFamily, InstanceSpec, capacity_blocks
from ..facts.eks_labels import DEVICE_PLUGIN, DRA
from ..facts.eks_pins import (
    CHARTS,
    DEFAULT_CHART_VERSIONS,
    DEFAULT_KUBERNETES_VERSION,
    DRA_INSTANCE_TYPES,
    DRA_MIN_KUBERNETES,
    EFA_CHART,
    FSX_CSI_CHART,
    KUBE_SCHEDULER_TAGS,
    KUBECTL_LAYERS,
    NEURON_CHART,
)
from ._base import Bool, Int, Name, NonNegativeInt, PositiveInt, Settings
from .training import Capacity, offered_in

CHART_KUBE_SCHEDULER_TAG = "v1.31.12-eks-1-31-30"
"""The kube-scheduler tag the Neuron chart 1.9.0 ships (values.yaml @ b77a6f90, tests/data/eks)."""

NEURON_NODE_TYPES = tuple(t for t in CATALOG.types() if CATALOG.get(t).family is not AcceleratorFamily.GPU)
"""Every Trainium and Inferentia type of the catalog: what a Neuron node group runs."""

INSTANCE_TYPE_PATTERN = r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$"
_ROLE_ARN = re.compile(r"arn:aws(-[a-z]+)*:iam::\d{12}:role/[\w+=,.@/-]{1,512}")


def role_arn(value: str) -> str:
    if not _ROLE_ARN.fullmatch(value):
        raise ValueError("an IAM role ARN (arn:aws:iam::123456789012:role/NAME)")
    return value


def check_kubernetes_version(value: str) -> str:
    if value not in KUBECTL_LAYERS:
        raise ValueError("a Kubernetes version the kit's pinned kubectl layer serves: " + ", ".join(
            f"{v} ({layer.package} {layer.package_version})" for v, layer in KUBECTL_LAYERS.items()))
    return value


def _chart_version(chart: str) -> AfterValidator:
    def check(value: str) -> str:
        if value not in CHARTS[chart]:
            raise ValueError(f"a {chart} chart version the kit has recorded (its values read): "
                             + ", ".join(CHARTS[chart]) + " (neuronfleet/facts/eks_pins.py)")
        return value
    return AfterValidator(check)


class ChartVersions(Settings):
    """The Helm chart versions a cluster installs: each one the kit has read the values of."""

    what: ClassVar[str] = "chart versions"
    neuron: Annotated[str, _chart_version(NEURON_CHART)] = DEFAULT_CHART_VERSIONS[NEURON_CHART]
    efa_device_plugin: Annotated[str, _chart_version(EFA_CHART)] = DEFAULT_CHART_VERSIONS[EFA_CHART]
    fsx_csi_driver: Annotated[str, _chart_version(FSX_CSI_CHART)] = DEFAULT_CHART_VERSIONS[FSX_CSI_CHART]


class NeuronNodegroupSettings(Settings):
    """One managed node group of one Neuron type on one kind of capacity.

    ``count`` nodes at most (and desired, unless ``desired``); reserved capacity (ODCR, Capacity Block) lives in one
    AZ, so its node group does too. A Capacity Block node group starts at ``desired: 0`` unless told otherwise: EKS
    asks for 0 before the block is active and while the group is upgraded.
    """

    what: ClassVar[str] = "Neuron node group"
    name: Name
    instance_type: Literal[NEURON_NODE_TYPES]  # type: ignore[valid-type]
    count: PositiveInt
    """Most nodes (for trn2u.48xlarge a multiple of 4: whole UltraServers)."""
    desired: NonNegativeInt | None = None
    """Nodes to run now (default: ``count``; on a Capacity Block 0). At most ``count``; whole UltraServers."""
    capacity: Capacity = Capacity()
    availability_zones: tuple[str, ...] = ()
    """The AZs the node group launches in (default: the reservation's, else every AZ of the subnets given)."""
    root_volume_gib: Int = Field(default=512, ge=100, le=16384)
    allow_unlisted_region: Bool = False
    """Allow a Capacity-Block-only type in a region AWS's offerings data does not list for it (as the Batch path)."""
    device_plugin: Bool = True
    """Neuron's device plugin manages this group's devices (``aws.amazon.com/neuron``, ``.../neuroncore``)."""
    dra: Bool = False
    """Neuron's DRA driver manages them instead (Trn2, Kubernetes 1.34+): then ``device_plugin: false``."""

    @property
    def spec(self) -> InstanceSpec:
        return CATALOG.get(self.instance_type)

    @property
    def desired_nodes(self) -> int:
        if self.desired is not None:
            return self.desired
        return 0 if self.capacity.type == "capacity-block" else self.count

    @property
    def devices(self) -> str:
        return DRA if self.dra else DEVICE_PLUGIN

    @property
    def reserved(self) -> bool:
        return self.capacity.type != "on-demand"

    @property
    def availability_zone(self) -> str | None:
        """The one AZ of a node group that has one (reserved capacity, or one AZ named)."""
        if len(self.availability_zones) == 1:
            return self.availability_zones[0]
        return self.capacity.availability_zone if not self.availability_zones else None

    def _problems(self) -> Iterator[Problem]:
        size = self.spec.ultraserver_size
        for field, value in (("count", self.count), ("desired", self.desired)):
            if value is not None and value % size:
                below = value // size * size
                near = " or ".join(str(n) for n in (below, below + size) if n > 0)
                yield Problem(field, value, f"a multiple of {size} ({self.instance_type} comes in whole UltraServers "
                                            f"of {size} instances), e.g. {near}")
        if self.desired is not None and self.desired > self.count:
            yield Problem("desired", self.desired, f"at most count ({self.count})")
        if self.reserved and len(self.availability_zones) > 1:
            yield Problem("availability_zones", list(self.availability_zones), (
                f"one AZ: a node group on {'a Capacity Block' if self.capacity.type == 'capacity-block' else 'an ODCR'}"
                " launches where the reservation is, and a reservation lives in one AZ (make one node group per "
                "reservation)"))
        if (self.capacity.availability_zone and self.availability_zones
                and self.capacity.availability_zone not in self.availability_zones):
            yield Problem("availability_zones", list(self.availability_zones),
                          f"the reservation's AZ ({self.capacity.availability_zone})")
        if self.dra and self.device_plugin:
            yield Problem("dra", self.dra, (
                "false while device_plugin is true: Neuron's DRA driver and its device plugin on one node both hand "
                "out the same devices (Neuron: \"Do not install the Neuron device plugin\" with DRA); set "
                "device_plugin: false on this node group, or leave dra off"))
        if not self.dra and not self.device_plugin:
            yield Problem("device_plugin", self.device_plugin,
                          "true, or dra: true: a Neuron node group needs one of the two to hand out its devices")
        if self.dra and self.instance_type not in DRA_INSTANCE_TYPES:
            yield Problem("dra", self.dra, f"false on {self.instance_type}: Neuron's DRA driver supports "
                                           + ", ".join(DRA_INSTANCE_TYPES))
        if self.spec.capacity_block_only and self.capacity.type != "capacity-block":
            yield Problem("capacity.type", self.capacity.type,
                          f"'capacity-block': {self.instance_type} is sold only as UltraServer Capacity Blocks")
        if self.capacity.type == "capacity-block" and not capacity_blocks().sold_for(self.instance_type):
            yield Problem("capacity.type", self.capacity.type,
                          f"'on-demand' or 'odcr': EC2 Capacity Blocks for ML are not sold for {self.instance_type}")
        if (size > 1 and self.capacity.type == "capacity-block" and self.capacity.reservation_id
                and self.count != size):
            yield Problem("capacity.reservation_id", self.capacity.reservation_id, (
                f"a resource_group_arn holding all {self.count // size or 1} UltraServer Capacity Blocks: one "
                f"UltraServer Capacity Block is one UltraServer ({size} instances)"))


class NeuronEksClusterSettings(Settings):
    """An EKS cluster for Neuron: version, endpoint, admins, node groups, charts."""

    what: ClassVar[str] = "Neuron EKS cluster"
    kubernetes_version: Annotated[str, AfterValidator(check_kubernetes_version)] = DEFAULT_KUBERNETES_VERSION
    endpoint_access: Literal["private", "public-and-private"] = "private"
    """``private``: the API server answers only inside the VPC (kubectl from a host there, or a VPN)."""
    admin_role_arns: tuple[Annotated[str, AfterValidator(role_arn)], ...] = ()
    """IAM roles given cluster-admin through EKS access entries (AmazonEKSClusterAdminPolicy)."""
    node_groups: tuple[NeuronNodegroupSettings, ...]
    charts: ChartVersions = ChartVersions()
    scheduler_extension: Bool = False
    """Neuron's scheduler extension (a second scheduler, ``my-scheduler``) for contiguous NeuronCores on part of a
    node; whole-node jobs do not need it ("optional if a workload pod consumes all neuron resources on a node",
    Neuron's docs). It runs in the device plugin's release only (the chart refuses it beside the DRA driver), with
    the kube-scheduler of the cluster's minor: ``kube_scheduler_tag``."""
    kube_scheduler_tag: Annotated[str, Field(pattern=r"^v\d+\.\d+\.\d+-eks-\d+-\d+-\d+$")] | None = None
    """The eks-distro kube-scheduler tag the scheduler extension runs (``v1.36.<patch>-eks-1-36-<build>``), of the
    cluster's minor: the chart's own (v1.31) is outside Kubernetes' skew policy for a 1.36 control plane, and no
    publisher file read offline names a 1.36 tag (docs/checks.md ``eks-kube-scheduler``)."""
    problem_detector: Bool = False
    """Neuron's node problem detector (NeuronHealth conditions from the kernel log), monitor only. Off by default: the
    EKS node monitoring agent (installed) detects the same four Neuron hardware errors and node auto repair replaces
    the node. On: the kit creates its namespace and gives its service account a Pod Identity role that may put
    metrics into ``NeuronHealthCheck`` only."""
    system_instance_type: Annotated[str, Field(pattern=INSTANCE_TYPE_PATTERN)] = "m7i.large"
    """The untainted node group CoreDNS and the charts' controllers run on (Neuron nodes are tainted)."""
    system_nodes: PositiveInt = Field(default=2, le=10)

    @property
    def uses_dra(self) -> bool:
        return any(g.dra for g in self.node_groups)

    @property
    def uses_device_plugin(self) -> bool:
        return any(g.device_plugin for g in self.node_groups)

    def _problems(self) -> Iterator[Problem]:
        if not self.node_groups:
            yield Problem("node_groups", [], "at least one Neuron node group")
        seen: set[str] = set()
        for i, g in enumerate(self.node_groups):
            if g.name in seen:
                yield Problem(f"node_groups[{i}].name", g.name, "a name not used by another node group")
            seen.add(g.name)
        major, minor = (int(p) for p in self.kubernetes_version.split("."))
        if self.scheduler_extension:
            yield from self._scheduler_problems(major, minor)
        elif self.kube_scheduler_tag is not None:
            yield Problem("kube_scheduler_tag", self.kube_scheduler_tag,
                          "unset while scheduler_extension is false (nothing runs it)")
        if self.uses_dra and (major, minor) < DRA_MIN_KUBERNETES:
            yield Problem("kubernetes_version", self.kubernetes_version,
                          "{}.{} or later with a DRA node group (Neuron's DRA driver)".format(*DRA_MIN_KUBERNETES))

    @property
    def scheduler_image_tag(self) -> str | None:
        """The kube-scheduler tag the scheduler extension runs: ``kube_scheduler_tag``, else the one recorded for the
        cluster's minor (neuronfleet.facts.eks_pins.KUBE_SCHEDULER_TAGS), else None."""
        return self.kube_scheduler_tag or KUBE_SCHEDULER_TAGS.get(self.kubernetes_version)

    def _scheduler_problems(self, major: int, minor: int) -> Iterator[Problem]:
        if not self.uses_device_plugin:
            yield Problem("scheduler_extension", True, (
                "false: the scheduler extension needs Neuron's device plugin (the chart refuses it without, and "
                "beside the DRA driver), and every node group here uses DRA"))
        tag = self.scheduler_image_tag
        if tag is None:
            yield Problem("scheduler_extension", True, (
                f"false, or give kube_scheduler_tag: no eks-distro kube-scheduler tag of Kubernetes {major}.{minor} "
                f"is recorded (the chart's own, {CHART_KUBE_SCHEDULER_TAG}, is outside the skew policy for a "
                f"{major}.{minor} control plane); find one with the check eks-kube-scheduler in docs/checks.md, e.g. "
                f"v{major}.{minor}.<patch>-eks-{major}-{minor}-<build>"))
        elif not tag.startswith(f"v{major}.{minor}.") or f"-eks-{major}-{minor}-" not in tag:
            yield Problem("kube_scheduler_tag", tag, (
                f"an eks-distro kube-scheduler tag of the cluster's minor {major}.{minor} "
                f"(v{major}.{minor}.<patch>-eks-{major}-{minor}-<build>): the kit runs the cluster's own minor "
                "(Kubernetes' skew policy allows no newer kube-scheduler than the API server)"))

    def region_problems(self, region: str) -> Iterator[Problem]:
        """Each node group's type offered in ``region`` and its AZs there."""
        for i, g in enumerate(self.node_groups):
            at = f"node_groups[{i}]"
            yield from (p.under(at) for p in offered_in(region, g.instance_type, "instance_type",
                                                         allow_unlisted=g.allow_unlisted_region))
            yield from (p.under(f"{at}.capacity") for p in g.capacity.region_problems(region))
            for j, az in enumerate(g.availability_zones):
                try:
                    rules.availability_zone(az, region)
                except ValueError as exc:
                    yield Problem(f"{at}.availability_zones[{j}]", az, str(exc))

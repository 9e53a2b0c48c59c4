"""A training cluster's ``eks:`` section (``scheduler: eks``): the fleet file's view of NeuronEksClusterSettings.

The cluster entry itself (name, instance_type, count, capacity, root_volume_gib) is the first Neuron node group;
``eks.node_groups`` adds more (an UltraServer group on its own blocks, an Inferentia group for serving). Every rule
is NeuronEksClusterSettings', so the fleet file and the construct API refuse the same things with the same words;
only the paths differ (the first node group's problems point at the entry's own fields).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from pydantic import Field

from ..core.problems import InvalidSettings, Problem
from ..settings import NetworkSettings, TrainiumClusterSettings
from ..settings._base import Bool, Settings
from ..settings.eks import ChartVersions, NeuronEksClusterSettings, NeuronNodegroupSettings
from ..settings.sharing import SharingSettings

Scheduler = Literal["batch", "eks"]


class EksSection(Settings):
    """``training_clusters[].eks``: the cluster-wide EKS settings and any node groups beyond the entry's own."""

    what: ClassVar[str] = "eks section"
    kubernetes_version: str | None = None
    endpoint_access: Literal["private", "public-and-private"] = "private"
    admin_role_arns: tuple[str, ...] = ()
    charts: ChartVersions = ChartVersions()
    scheduler_extension: Bool = False
    """Neuron's scheduler extension (part-of-a-node pods); then ``kube_scheduler_tag`` of the cluster's minor."""
    kube_scheduler_tag: str | None = None
    problem_detector: Bool = False
    """Neuron's node problem detector (monitor only); the EKS node monitoring agent and auto repair run anyway."""
    system_instance_type: str | None = None
    system_nodes: int | None = None
    availability_zones: tuple[str, ...] = ()
    """AZs of the entry's own node group (default: the reservation's, else the network's training AZ)."""
    dra: Bool = False
    """The entry's own node group uses Neuron's DRA driver instead of the device plugin."""
    node_groups: tuple[NeuronNodegroupSettings, ...] = Field(default=(), max_length=20)
    sharing: SharingSettings | None = None
    """One reserved node group shared by day (inference) and night (training): docs/sharing.md."""


def cluster_settings(entry: TrainiumClusterSettings, name: str, section: EksSection,
                     training_az: str | None = None) -> NeuronEksClusterSettings:
    """The NeuronEksClusterSettings of one ``scheduler: eks`` entry (raises InvalidSettings, paths as the construct
    API's: :func:`entry_problems` moves them to the fleet file's)."""
    main: dict[str, Any] = {
        "name": name, "instance_type": entry.instance_type, "count": entry.count, "capacity": entry.capacity,
        "root_volume_gib": entry.root_volume_gib, "allow_unlisted_region": entry.allow_unlisted_region,
        "dra": section.dra, "device_plugin": not section.dra,
        "availability_zones": section.availability_zones or (
            (training_az,) if training_az and not entry.capacity.availability_zone else ()),
    }
    fields: dict[str, Any] = {
        k: v for k, v in section.model_dump(
            exclude={"availability_zones", "dra", "node_groups", "charts", "sharing"}).items()
        if v is not None}
    groups: tuple[Any, ...] = (main, *section.node_groups)  # the first as a dict: its problems keep their paths
    return NeuronEksClusterSettings(**fields, charts=section.charts, node_groups=groups)


_GROUP = re.compile(r"node_groups\[(\d+)\](.*)")
_OWN = {".name": "name", ".instance_type": "instance_type", ".count": "count", ".root_volume_gib": "root_volume_gib"}


def entry_problems(entry: TrainiumClusterSettings, name: str, section: EksSection | None,
                   training_az: str | None = None, *, region: str | None = None,
                   network: NetworkSettings | None = None) -> Iterator[Problem]:
    """The problems of an entry's EKS cluster, with fleet-file paths relative to the entry: its settings' rules, and
    with ``region``/``network`` each added node group's type and AZs in the region and the reservation's AZ in the
    network (the entry's own are checked as a Batch cluster's are)."""
    if section is None:
        section = EksSection()
    try:
        settings = cluster_settings(entry, name, section, training_az)
    except InvalidSettings as exc:
        yield from (_moved(p) for p in exc.problems)
        return
    problems: list[Problem] = []
    if section.sharing is not None:
        try:
            section.sharing.pool_schedule(settings, name)
        except InvalidSettings as exc:
            yield from (p.under("eks.sharing") for p in exc.problems)
    if region is not None:
        problems += [p for p in settings.region_problems(region) if not p.path.startswith("node_groups[0]")]
    if network is not None:
        for i, group in enumerate(settings.node_groups[1:], start=1):
            problems += [p.under(f"node_groups[{i}]") for p in network.capacity_az_problems(
                group.capacity.availability_zone)]
            problems += [Problem(f"node_groups[{i}].availability_zones[{j}]", az,
                                 f"one of network.availability_zones ({', '.join(network.availability_zones)})")
                         for j, az in enumerate(group.availability_zones) if az not in network.availability_zones]
    yield from (_moved(p) for p in problems)


def _moved(p: Problem) -> Problem:
    """A NeuronEksClusterSettings problem at its fleet-file path (relative to the entry)."""
    m = _GROUP.fullmatch(p.path)
    if m and m.group(1) == "0":
        rest = m.group(2)
        path = _OWN.get(rest) or (rest[1:] if rest.startswith(".capacity")
                                  else "eks.dra" if rest == ".device_plugin" else f"eks{rest}")
        return Problem(path, p.value, p.allowed)
    if m:
        return Problem(f"eks.node_groups[{int(m.group(1)) - 1}]{m.group(2)}", p.value, p.allowed)
    return p.under("eks")

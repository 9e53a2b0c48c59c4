"""Jobs that land whole on UltraServers (issue 40): a model of what the kit relies on Kueue v0.19.2's
topology-aware scheduling (TAS) doing, each behaviour checked first on the publisher's own test cases (inputs and
expected outputs copied), then run on the kit's own objects: the pool's Topology (sharing.manifests.topology_levels)
and the training Job's annotations and affinity (eks.manifests.ultraserver_placement).

Sources, all kubernetes-sigs/kueue @ 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb (tag v0.19.2, sharing.pins.KUEUE_COMMIT):

- what the annotations request: pkg/controller/jobframework/tas.go ``(*podSetTopologyRequestBuilder).Build``
  (required -> Required; slice annotations -> PodSetSliceRequiredTopology/PodSetSliceSize);
  pkg/cache/scheduler/tas_flavor_snapshot.go ``levelKey`` (a slice-only request is placed from the Topology's highest
  level, ``isUnconstrained``: true) and ``findTopologyAssignment`` (the reasons: "no requested topology level for
  slices: ...", "podset slice topology ... is above the podset topology ...");
- how the annotations are validated: pkg/controller/jobframework/tas_validation.go ``ValidateTASPodSetRequest`` and
  ``ValidateSliceSizeAnnotationUpperBound``; test pkg/controller/jobs/job/job_webhook_test.go TestValidateCreate;
- which nodes a TAS flavor has: pkg/util/tas/node.go ``NodeMatchesFlavor`` (every Topology level's label present);
  test pkg/cache/scheduler/tas_nodes_cache_test.go TestNodesCacheFind;
- where pods fit: test pkg/cache/scheduler/tas_cache_test.go TestFindTopologyAssignments (the cases named below).

The model counts whole pods per node and whole slices per slice-level domain, as Kueue's phase 1 does; it does not
model BestFit's ordering beyond what the cases here need (which domains, never which of two equal ones).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from neuronfleet.eks import manifests as eks_manifests
from neuronfleet.facts.eks_labels import (
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    NODE_GROUP_LABEL,
    ULTRASERVER_SERVER_LABEL,
)
from neuronfleet.facts.eks_pins import DEFAULT_KUBERNETES_VERSION
from neuronfleet.facts.kueue import QUEUE_LABEL
from neuronfleet.settings import Capacity
from neuronfleet.settings.eks import NeuronNodegroupSettings
from neuronfleet.sharing import manifests as pool_manifests
from neuronfleet_contract.pool_schedule import PoolSchedule

KUEUE = Path(__file__).resolve().parents[1] / "data" / "kueue"
HOSTNAME = "kubernetes.io/hostname"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
BLOCK, RACK = "cloud.com/topology-block", "cloud.com/topology-rack"


# --------------------------------------------------------------------------------------------------- the model


@dataclass
class Node:
    name: str
    labels: dict[str, str]
    free: int
    """Allocatable less what other pods use, in the unit pods request (cpu millicores, Neuron devices)."""


@dataclass
class Placement:
    reason: str = ""
    pods: dict[str, int] = field(default_factory=dict)
    """node name -> pods placed there."""

    @property
    def admitted(self) -> bool:
        return not self.reason


def flavor_nodes(nodes: list[Node], node_labels: dict[str, str], levels: list[str]) -> list[Node]:
    """pkg/util/tas/node.go NodeMatchesFlavor: the flavor's labels match and every level's label is present."""
    return [n for n in nodes if all(n.labels.get(k) == v for k, v in node_labels.items())
            and all(level in n.labels for level in levels)]


def validate(annotations: dict[str, str], count: int) -> list[str]:
    """tas_validation.go ValidateTASPodSetRequest and ValidateSliceSizeAnnotationUpperBound (the rules that concern
    the annotations the kit writes), their messages."""
    errors = []
    if sum(k in annotations for k in (KUEUE_REQUIRED_TOPOLOGY, PREFERRED, UNCONSTRAINED)) > 1:
        errors.append("must not contain more than one topology annotation")
    size = annotations.get(KUEUE_SLICE_SIZE)
    if size is not None:
        if not size.lstrip("-").isdigit():
            errors.append("must be a numeric value")
        elif int(size) < 1:
            errors.append("must be greater than or equal to 1")
        elif int(size) > count:
            errors.append(f"must not be greater than pod set count {count}")
    if KUEUE_SLICE_REQUIRED_TOPOLOGY in annotations and size is None:
        errors.append(f"must be set when '{KUEUE_SLICE_REQUIRED_TOPOLOGY}' is specified")
    if KUEUE_SLICE_REQUIRED_TOPOLOGY not in annotations and size is not None:
        errors.append(f"may not be set when '{KUEUE_SLICE_REQUIRED_TOPOLOGY}' is not specified")
    return errors


def request(levels: list[str], annotations: dict[str, str]) -> tuple[str, str, int] | str:
    """(the podset's level, the slices' level, the slice size), or why Kueue refuses the request: tas.go Build, then
    tas_flavor_snapshot.go levelKey (a slice-only request: the highest level) and findTopologyAssignment's checks."""
    required = annotations.get(KUEUE_REQUIRED_TOPOLOGY)
    slice_level = annotations.get(KUEUE_SLICE_REQUIRED_TOPOLOGY)
    if slice_level is not None and KUEUE_SLICE_SIZE not in annotations:
        return "slice topology requested, but slice size not provided"
    level = required or (levels[0] if slice_level else levels[-1])
    if level not in levels:
        return f"no requested topology level: {level}"
    slice_level = slice_level or levels[-1]
    if slice_level not in levels:
        return f"no requested topology level for slices: {slice_level}"
    if levels.index(level) > levels.index(slice_level):
        return f"podset slice topology {slice_level} is above the podset topology {level}"
    return level, slice_level, int(annotations.get(KUEUE_SLICE_SIZE, "1"))


def refused(most: int, wanted: int, unit: str, topology: str) -> Placement:
    return Placement(f'topology "{topology}" doesn\'t allow to fit any of {wanted} {unit}' if not most else
                     f'topology "{topology}" allows to fit only {most} out of {wanted} {unit}')


def place(nodes: list[Node], levels: list[str], annotations: dict[str, str], count: int, per_pod: int, *,
          node_labels: dict[str, str] | None = None, topology: str = "default") -> Placement:
    """Where Kueue's TAS puts ``count`` pods of ``per_pod`` each, or why it admits none (:func:`request`, then
    phase 1 of findTopologyAssignment: whole pods per node, whole slices per slice-level domain, and with a required
    level all of them in one domain of it, the tightest that fits)."""
    asked = request(levels, annotations)
    if isinstance(asked, str):
        return Placement(asked)
    level, slice_level, size = asked
    members = flavor_nodes(nodes, node_labels or {}, levels)

    def key(node: Node, at: str) -> tuple[str, ...]:
        return tuple(node.labels[lv] for lv in levels[:levels.index(at) + 1])

    def slices(group: list[Node]) -> dict[tuple[str, ...], int]:
        out: dict[tuple[str, ...], int] = {}
        for n in group:
            out[key(n, slice_level)] = out.get(key(n, slice_level), 0) + n.free // per_pod
        return {k: v // size for k, v in out.items()}

    wanted = count // size
    unit = "slice(s)" if KUEUE_SLICE_SIZE in annotations else "pod(s)"
    if KUEUE_REQUIRED_TOPOLOGY in annotations:
        domains: dict[tuple[str, ...], list[Node]] = {}
        for n in members:
            domains.setdefault(key(n, level), []).append(n)
        fits = {d: sum(slices(group).values()) for d, group in domains.items()}
        ok = sorted((v, d) for d, v in fits.items() if v >= wanted)  # BestFit: the tightest domain that fits
        if not ok:
            return refused(max(fits.values(), default=0), wanted, unit, topology)
        members = domains[ok[0][1]]
    free = slices(members)
    if sum(free.values()) < wanted:
        return refused(sum(free.values()), wanted, unit, topology)
    placement = Placement()
    for domain, n_slices in sorted(free.items(), key=lambda kv: (-kv[1], kv[0])):  # the fullest first
        take = min(n_slices, wanted)
        wanted -= take
        left = take * size
        for n in sorted((n for n in members if key(n, slice_level) == domain), key=lambda n: n.name):
            placement.pods[n.name] = min(n.free // per_pod, left)
            left -= placement.pods[n.name]
        if not wanted:
            break
    placement.pods = {k: v for k, v in placement.pods.items() if v}
    return placement


# ------------------------------------------------------------------------ the publisher's cases, through the model

def node(name: str, free: int, **labels: str) -> Node:
    return Node(name, {k.replace("_", "/"): v for k, v in labels.items()}, free)


def default_nodes() -> list[Node]:
    """tas_cache_test.go TestFindTopologyAssignments ``defaultNodes`` (cpu in millicores)."""
    rows = [("b1-r1-x3", "b1", "r1", "x3", 1000), ("b1-r2-x5", "b1", "r2", "x5", 1000),
            ("b1-r2-x1", "b1", "r2", "x1", 1000), ("b1-r2-x6", "b1", "r2", "x6", 1000),
            ("b2-r2-x2", "b2", "r1", "x2", 1000), ("b2-r2-x4", "b2", "r2", "x4", 2000)]
    return [Node(n, {BLOCK: b, RACK: r, HOSTNAME: h}, cpu) for n, b, r, h, cpu in rows]


def test_block_required_too_many_pods() -> None:
    """TestFindTopologyAssignments "block required; too many Pods to fit requested; BestFit": defaultNodes, levels
    [block, rack], 5 pods of 1 cpu -> 'topology "default" allows to fit only 4 out of 5 pod(s)'."""
    got = place(default_nodes(), [BLOCK, RACK], {KUEUE_REQUIRED_TOPOLOGY: BLOCK}, 5, 1000)
    assert got.reason == 'topology "default" allows to fit only 4 out of 5 pod(s)'


def test_rack_required_too_many_pods() -> None:
    """"rack required; too many pods to fit in any rack; BestFit": 4 pods -> 'allows to fit only 3 out of 4 pod(s)'
    (a rack is a domain under its block: b1/r1 and b2/r1 are two)."""
    got = place(default_nodes(), [BLOCK, RACK], {KUEUE_REQUIRED_TOPOLOGY: RACK}, 4, 1000)
    assert got.reason == 'topology "default" allows to fit only 3 out of 4 pod(s)'
    assert place(default_nodes(), [BLOCK, RACK], {KUEUE_REQUIRED_TOPOLOGY: RACK}, 3, 1000).pods == {
        "b1-r2-x1": 1, "b1-r2-x5": 1, "b1-r2-x6": 1}


def test_slices_do_not_fit_in_racks() -> None:
    """"block required for podset; rack required for slices; podset fits in a block, but slices do not fit in
    racks": one block, three racks of one 2-cpu node; 6 pods of 1 cpu in slices of 3 -> 'topology "default" doesn't
    allow to fit any of 2 slice(s)'."""
    nodes = [Node(f"b1-r{i}-x", {BLOCK: "b1", RACK: f"r{i}", HOSTNAME: f"x{i}"}, 2000) for i in (1, 2, 3)]
    ann = {KUEUE_REQUIRED_TOPOLOGY: BLOCK, KUEUE_SLICE_REQUIRED_TOPOLOGY: RACK, KUEUE_SLICE_SIZE: "3"}
    assert place(nodes, [BLOCK, RACK, HOSTNAME], ann, 6, 1000).reason == \
        'topology "default" doesn\'t allow to fit any of 2 slice(s)'


def test_only_one_of_two_slices_fits() -> None:
    """"block required for podset; rack required for slices; only 1 out of 2 slices fit the topology": racks of 3, 1,
    1, 1 cpu -> 'topology "default" allows to fit only 1 out of 2 slice(s)'."""
    nodes = [Node(f"b1-r{i}", {BLOCK: "b1", RACK: f"r{i}", HOSTNAME: h}, cpu)
             for i, h, cpu in ((1, "x3", 3000), (2, "x5", 1000), (3, "x1", 1000), (4, "x6", 1000))]
    ann = {KUEUE_REQUIRED_TOPOLOGY: BLOCK, KUEUE_SLICE_REQUIRED_TOPOLOGY: RACK, KUEUE_SLICE_SIZE: "3"}
    assert place(nodes, [BLOCK, RACK, HOSTNAME], ann, 6, 1000).reason == \
        'topology "default" allows to fit only 1 out of 2 slice(s)'


def test_slice_only_request_places_whole_slices_across_blocks() -> None:
    """"no topology for podset; rack required for slices; multiple blocks; BestFit": defaultNodes, three levels,
    4 pods in slices of 2 at the rack -> admitted; the publisher's assignment is x1:1, x5:1 (rack b1/r2) and x4:2
    (rack b2/r2): two racks of 2 pods each, over two blocks. The model places the same pods per rack."""
    got = place(default_nodes(), [BLOCK, RACK, HOSTNAME],
                {KUEUE_SLICE_REQUIRED_TOPOLOGY: RACK, KUEUE_SLICE_SIZE: "2"}, 4, 1000)
    assert got.admitted
    rack = {n.name: (n.labels[BLOCK], n.labels[RACK]) for n in default_nodes()}
    per_rack: dict[tuple[str, str], int] = {}
    for name, k in got.pods.items():
        per_rack[rack[name]] = per_rack.get(rack[name], 0) + k
    publisher = {("b1", "r2"): 1 + 1, ("b2", "r2"): 2}  # x1, x5 | x4
    assert per_rack == publisher


@pytest.mark.parametrize(("ann", "reason"), [
    ({KUEUE_REQUIRED_TOPOLOGY: HOSTNAME, KUEUE_SLICE_REQUIRED_TOPOLOGY: BLOCK, KUEUE_SLICE_SIZE: "1"},
     "podset slice topology cloud.com/topology-block is above the podset topology kubernetes.io/hostname"),
    ({KUEUE_REQUIRED_TOPOLOGY: BLOCK, KUEUE_SLICE_REQUIRED_TOPOLOGY: HOSTNAME},
     "slice topology requested, but slice size not provided"),
    ({KUEUE_REQUIRED_TOPOLOGY: BLOCK, KUEUE_SLICE_REQUIRED_TOPOLOGY: "not-existing-topology-level",
      KUEUE_SLICE_SIZE: "1"}, "no requested topology level for slices: not-existing-topology-level"),
], ids=["slice required topology level cannot be above the main required topology level",
        "slice size is required when slice topology is requested", "cannot request not existing slice topology"])
def test_the_publishers_refusals(ann: dict[str, str], reason: str) -> None:
    """TestFindTopologyAssignments, the three cases named as the ids: defaultNodes, three levels, 1 pod."""
    assert place(default_nodes(), [BLOCK, RACK, HOSTNAME], ann, 1, 1000).reason == reason


def test_a_node_without_a_levels_label_is_not_in_the_flavor() -> None:
    """tas_nodes_cache_test.go TestNodesCacheFind "match labels and levels": nodes test1 (no labels), test2 (zone
    us-east-1a), test3 (zone us-east-1a, block b1), test4 (zone us-east-1); flavor zone us-east-1a, level block ->
    test3 only; "match levels" -> test3 only; "match labels" -> test2, test3."""
    zone = "cloud.provider.com/zone"
    block = "cloud.provider.com/topology-block"
    nodes = [Node("test1", {}, 1), Node("test2", {zone: "us-east-1a"}, 1),
             Node("test3", {zone: "us-east-1a", block: "b1"}, 1), Node("test4", {zone: "us-east-1"}, 1)]
    assert [n.name for n in flavor_nodes(nodes, {zone: "us-east-1a"}, [block])] == ["test3"]
    assert [n.name for n in flavor_nodes(nodes, {}, [block])] == ["test3"]
    assert [n.name for n in flavor_nodes(nodes, {zone: "us-east-1a"}, [])] == ["test2", "test3"]


@pytest.mark.parametrize(("ann", "count", "errors"), [
    ({KUEUE_SLICE_REQUIRED_TOPOLOGY: "cloud.com/block", KUEUE_SLICE_SIZE: "1"}, 1, []),
    ({KUEUE_REQUIRED_TOPOLOGY: "cloud.com/block", KUEUE_SLICE_REQUIRED_TOPOLOGY: "cloud.com/block"}, 1,
     ["must be set when 'kueue.x-k8s.io/podset-slice-required-topology' is specified"]),
    ({KUEUE_REQUIRED_TOPOLOGY: "cloud.com/block", KUEUE_SLICE_REQUIRED_TOPOLOGY: "cloud.com/block",
      KUEUE_SLICE_SIZE: "0"}, 1, ["must be greater than or equal to 1"]),
    ({KUEUE_REQUIRED_TOPOLOGY: "cloud.com/block", KUEUE_SLICE_SIZE: "1"}, 1,
     ["may not be set when 'kueue.x-k8s.io/podset-slice-required-topology' is not specified"]),
    ({KUEUE_REQUIRED_TOPOLOGY: "cloud.com/block", KUEUE_SLICE_REQUIRED_TOPOLOGY: "cloud.com/block",
      KUEUE_SLICE_SIZE: "20"}, 4, ["must not be greater than pod set count 4"]),
], ids=["valid topology request - slice-only topology", "invalid topology request - slice requested without slice size",
        "invalid topology request - slice size is zero",
        "invalid topology request - slice size provided without slice topology",
        "invalid slice topology request - slice size larger than number of podsets"])
def test_the_publishers_validation(ann: dict[str, str], count: int, errors: list[str]) -> None:
    """job_webhook_test.go TestValidateCreate, the cases named as the ids (a Job's pod set count is its
    parallelism: 1 by default, 4 in the last case)."""
    assert validate(ann, count) == errors


# ------------------------------------------------------------------------------------------------- the kit's

BLOCKS = "arn:aws:resource-groups:us-east-2:111111111111:group/ultra"


def ultra(count: int) -> NeuronNodegroupSettings:
    return NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=count,
                                   capacity=Capacity.capacity_block(resource_group_arn=BLOCKS))


def pool_objects(group: NeuronNodegroupSettings, floor: int = 1) -> list[dict]:
    schedule = PoolSchedule.build(pool="rainier", time_zone="UTC", day=["07:00-23:00"],
                                  pool_devices=group.count * 16, replica_devices=4, day_replicas=4,
                                  night_floor=floor, checkpoint_deadline=30)
    return pool_manifests.kueue_objects(schedule, group)


def kit_levels(group: NeuronNodegroupSettings) -> list[str]:
    [topology] = [o for o in pool_objects(group) if o["kind"] == "Topology"]
    return [level["nodeLabel"] for level in topology["spec"]["levels"]]


def ultraservers(servers: int, *, busy: dict[tuple[int, int], int] | None = None, labelled: bool = True) -> list[Node]:
    """``servers`` trn2u UltraServers of 4 nodes, 16 Neuron devices each, ``busy`` (server, node) -> devices other
    pods hold; ``labelled``: the nodes carry Neuron's server-id label."""
    out = []
    for s in range(servers):
        for i in range(4):
            labels = {NODE_GROUP_LABEL: "ultra", HOSTNAME: f"ip-10-0-{s}-{i}"}
            if labelled:
                labels[ULTRASERVER_SERVER_LABEL.format(size=4)] = f"us-{s}"
            out.append(Node(f"ip-10-0-{s}-{i}", labels, 16 - (busy or {}).get((s, i), 0)))
    return out


def job(group: NeuronNodegroupSettings, nodes: int) -> dict:
    return eks_manifests.training_job(group, nodes=nodes)[-1]


def pod_annotations(obj: dict) -> dict[str, str]:
    return obj["spec"]["template"]["metadata"].get("annotations", {})


def servers_of(placement: Placement) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, k in placement.pods.items():
        server = f"us-{name.split('-')[3]}"
        out[server] = out.get(server, 0) + k
    return out


def test_the_pools_topology_has_the_ultraserver_above_the_node() -> None:
    server = ULTRASERVER_SERVER_LABEL.format(size=4)
    assert kit_levels(ultra(8)) == [server, HOSTNAME]
    assert kit_levels(NeuronNodegroupSettings(name="p", instance_type="trn2.48xlarge", count=4)) == [HOSTNAME]


def _topology_schema() -> dict:
    crd = yaml.safe_load((KUEUE / "kueue.x-k8s.io_topologies.yaml").read_text())
    return next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")["schema"]["openAPIV3Schema"]


HOSTNAME_LAST = ("size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
                 "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'")
UNIQUE = "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0"


def crd_rules(levels: list[dict]) -> list[str]:
    """The Topology CRD's two CEL rules on spec.levels that a new object meets or not (``self == oldSelf`` is an
    update's), as written there: hostname only as the last level; unique levels."""
    out = []
    if any(lv["nodeLabel"] == HOSTNAME for lv in levels) and levels[-1]["nodeLabel"] != HOSTNAME:
        out.append("the kubernetes.io/hostname label can only be used at the lowest level of topology")
    if any(levels.count(lv) > 1 for lv in levels):
        out.append("must be unique")
    return out


def test_the_pools_topology_validates_against_kueues_crd() -> None:
    """The v1beta2 schema (jsonschema) and the CRD's CEL rules on levels, whose text is read from the CRD itself (a
    new rule there fails this test until it is modelled)."""
    schema = _topology_schema()
    levels_schema = schema["properties"]["spec"]["properties"]["levels"]
    rules = {" ".join(r["rule"].split()): r["message"] for r in levels_schema["x-kubernetes-validations"]}
    assert rules == {"self == oldSelf": "field is immutable", UNIQUE: "must be unique",
                     HOSTNAME_LAST: "the kubernetes.io/hostname label can only be used at the lowest level of topology"}
    [topology] = [o for o in pool_objects(ultra(8)) if o["kind"] == "Topology"]
    jsonschema.validate(topology, schema)
    assert crd_rules(topology["spec"]["levels"]) == []
    flipped = copy.deepcopy(topology)
    flipped["spec"]["levels"].reverse()  # the validator is live: hostname above the UltraServer is refused
    assert crd_rules(flipped["spec"]["levels"]) == [
        "the kubernetes.io/hostname label can only be used at the lowest level of topology"]


def test_a_one_ultraserver_job_lands_on_one_free_ultraserver() -> None:
    """4 pods of 16 devices, required at the server level: UltraServer us-0 has 4 devices of one node taken (an
    inference pod), so the whole job goes to us-1; with both partly used, it is not admitted at all."""
    group = ultra(8)
    ann = pod_annotations(job(group, 4))
    assert ann == {KUEUE_REQUIRED_TOPOLOGY: ULTRASERVER_SERVER_LABEL.format(size=4)}
    assert validate(ann, 4) == []
    got = place(ultraservers(2, busy={(0, 1): 4}), kit_levels(group), ann, 4, 16,
                node_labels={NODE_GROUP_LABEL: "ultra"})
    assert servers_of(got) == {"us-1": 4} and set(got.pods.values()) == {1}
    got = place(ultraservers(2, busy={(0, 1): 4, (1, 2): 4}), kit_levels(group), ann, 4, 16,
                node_labels={NODE_GROUP_LABEL: "ultra"})
    assert got.reason == 'topology "default" allows to fit only 3 out of 4 pod(s)'


def test_a_two_ultraserver_job_takes_two_whole_ultraservers_or_waits() -> None:
    """8 pods in slices of 4 at the server level, on three UltraServers: with two of them whole, each gets 4; with
    one node of each partly used (9 whole nodes, enough for 8 pods), Kueue admits nothing, where the same job without
    the slice annotations would have been split over three UltraServers (the model shows that split too)."""
    group = ultra(12)
    ann = pod_annotations(job(group, 8))
    assert ann == {KUEUE_SLICE_REQUIRED_TOPOLOGY: ULTRASERVER_SERVER_LABEL.format(size=4), KUEUE_SLICE_SIZE: "4"}
    assert validate(ann, 8) == []
    levels = kit_levels(group)
    got = place(ultraservers(3, busy={(1, 0): 4}), levels, ann, 8, 16, node_labels={NODE_GROUP_LABEL: "ultra"})
    assert servers_of(got) == {"us-0": 4, "us-2": 4}
    scattered = ultraservers(3, busy={(0, 0): 4, (1, 1): 4, (2, 2): 4})
    got = place(scattered, levels, ann, 8, 16, node_labels={NODE_GROUP_LABEL: "ultra"})
    assert got.reason == 'topology "default" doesn\'t allow to fit any of 2 slice(s)'
    split = place(scattered, levels, {}, 8, 16, node_labels={NODE_GROUP_LABEL: "ultra"})
    assert split.admitted and len(servers_of(split)) == 3


def test_without_the_ultraserver_label_nothing_is_admitted() -> None:
    """A DRA node group whose nodes lack the server-id label (its source unconfirmed): the flavor has no node, so
    the job waits with the reason Kueue gives for no capacity: loud, never a silent split."""
    group = ultra(8)
    got = place(ultraservers(2, labelled=False), kit_levels(group), pod_annotations(job(group, 4)), 4, 16,
                node_labels={NODE_GROUP_LABEL: "ultra"})
    assert got.reason == 'topology "default" doesn\'t allow to fit any of 4 pod(s)'


def test_one_ultraserver_jobs_require_their_ultraserver_and_larger_ones_prefer_it() -> None:
    """Neuron's UltraServer guide (deploy/eks/ultraserver.rst @ 81ce03ae): its 2- and 4-node jobs use
    podAffinity.requiredDuringScheduling... at the server-id key, its 16-node job preferredDuringScheduling...
    (weight 100). The kit does the same; both validate against Kubernetes 1.36."""
    group = ultra(8)
    server = ULTRASERVER_SERVER_LABEL.format(size=4)
    one, two = job(group, 4), job(group, 8)
    for obj in (one, two):
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)
    [term] = one["spec"]["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == server
    assert term["labelSelector"]["matchLabels"] == one["spec"]["template"]["metadata"]["labels"]
    affinity = two["spec"]["template"]["spec"]["affinity"]["podAffinity"]
    assert list(affinity) == ["preferredDuringSchedulingIgnoredDuringExecution"]
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"] == server
    # no UltraServer shared with another UltraServer job, either way
    for obj in (one, two):
        anti = obj["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        apart = anti["requiredDuringSchedulingIgnoredDuringExecution"]
        assert [t["topologyKey"] for t in apart] == [HOSTNAME, server]


def test_a_node_group_without_ultraservers_gets_no_topology_annotation() -> None:
    trn1 = NeuronNodegroupSettings(name="trn1", instance_type="trn1.32xlarge", count=2)
    assert pod_annotations(job(trn1, 2)) == {}
    assert "podAffinity" not in job(trn1, 2)["spec"]["template"]["spec"]["affinity"]


def test_the_pools_training_job_on_ultraservers_is_sliced_by_ultraserver() -> None:
    """The pool's example Job (sharing.manifests.training_job: every lent node, whole UltraServers) carries the same
    annotations, whose level is one of the pool's Topology levels."""
    group = ultra(12)
    schedule = PoolSchedule.build(pool="rainier", time_zone="UTC", day=["07:00-23:00"], pool_devices=12 * 16,
                                  replica_devices=4, day_replicas=4, night_floor=1, checkpoint_deadline=30)
    pool_job = pool_manifests.training_job(schedule, group)[-1]
    ann = pod_annotations(pool_job)
    assert pool_job["spec"]["parallelism"] == 8  # 11 lendable nodes -> 2 whole UltraServers
    assert ann[KUEUE_SLICE_REQUIRED_TOPOLOGY] in kit_levels(group) and ann[KUEUE_SLICE_SIZE] == "4"
    assert validate(ann, pool_job["spec"]["parallelism"]) == []


def test_an_ultraserver_pools_objects_validate() -> None:
    """Every Kueue object of a pool on UltraServers against Kueue 0.19.2's CRDs (strict), and its Jobs (one and two
    UltraServers, the pool's sliced one) against Kubernetes 1.36 (strict)."""
    from tests.unit.test_sharing_manifests import kueue_valid

    group = ultra(12)
    for obj in pool_objects(group):
        kueue_valid(obj)
    schedule = PoolSchedule.build(pool="rainier", time_zone="UTC", day=["07:00-23:00"], pool_devices=12 * 16,
                                  replica_devices=4, day_replicas=4, night_floor=1, checkpoint_deadline=30)
    for obj in [*eks_manifests.training_job(group, nodes=4), *eks_manifests.training_job(group, nodes=8),
                *pool_manifests.training_job(schedule, group)]:
        kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)


# ------------------------------------------------ outside a pool: the cluster's placement queue (eks.manifests)
#
# A Job reaches TAS only through its queue chain. What Kueue v0.19.2 checks on the way, each rule with its source
# (kubernetes-sigs/kueue @ 8eab6877) and modelled on the publisher's own example first (single-clusterqueue-setup.yaml
# and sample-job.yaml, tests/data/kueue, copied verbatim), then run on the kit's objects:
#
# - Kueue manages a Job only with the ``kueue.x-k8s.io/queue-name`` label (the chart's default configuration leaves
#   ``manageJobsWithoutQueueName`` off: charts/kueue/values.yaml ``#manageJobsWithoutQueueName: true``);
# - the LocalQueue of that name in the Job's namespace, and its ClusterQueue, exist (pkg/controller/core/
#   workload_controller.go: "LocalQueue %s doesn't exist", "ClusterQueue %s doesn't exist");
# - the ClusterQueue's namespaceSelector selects the namespace (pkg/workload/resources.go ErrNamespaceMismatch
#   "workload namespace doesn't match ClusterQueue selector"; concepts/cluster_queue.md: ``{}`` matches all,
#   ``matchLabels: kubernetes.io/metadata.name: team-a`` one namespace);
# - every requested resource is covered (flavorassigner.go "resource %s unavailable in ClusterQueue"; test
#   flavorassigner_test.go TestAssignFlavors "resource not listed in clusterQueue") and fits the nominal quota with
#   no cohort to borrow from ("insufficient quota for %s in flavor %s ...");
# - the pod's nodeSelector, on the flavor's own label keys, matches the flavor's nodeLabels (flavorassigner.go
#   ``flavorSelector``: "flavor %s doesn't match node affinity"; TestAssignFlavors "multiple flavors, fits a node
#   selector": keys the flavor does not name are ignored);
# - the requested topology level is a level of the flavor's Topology (tas_flavorassigner.go
#   ``checkPodSetAndFlavorMatchForTAS``: "Flavor %q does not contain the requested level").


def admission_chain(job: dict, objects: list[dict], namespaces: dict[str, dict[str, str]]) -> tuple[str, dict]:
    """("", the flavor) when Kueue would take ``job`` to a flavor, else the first reason it would not."""
    labels = job["metadata"].get("labels", {})
    queue = labels.get(QUEUE_LABEL)
    if not queue:
        return "not managed by Kueue (no kueue.x-k8s.io/queue-name label)", {}
    namespace = job["metadata"]["namespace"]
    by_kind: dict[str, dict[tuple[str, str], dict]] = {}
    for o in objects:
        by_kind.setdefault(o["kind"], {})[(o["metadata"].get("namespace", ""), o["metadata"]["name"])] = o
    local = by_kind.get("LocalQueue", {}).get((namespace, queue))
    if local is None:
        return f"LocalQueue {queue} doesn't exist", {}
    cq_name = local["spec"]["clusterQueue"]
    cq = by_kind.get("ClusterQueue", {}).get(("", cq_name))
    if cq is None:
        return f"ClusterQueue {cq_name} doesn't exist", {}
    selector = cq["spec"].get("namespaceSelector")
    if selector is None or any(namespaces.get(namespace, {}).get(k) != v
                               for k, v in selector.get("matchLabels", {}).items()):
        return "workload namespace doesn't match ClusterQueue selector", {}
    pod = job["spec"]["template"]
    requests = pod["spec"]["containers"][0]["resources"].get("requests", {})
    [group] = cq["spec"]["resourceGroups"]
    for resource in requests:
        if resource not in group["coveredResources"]:
            return f"resource {resource} unavailable in ClusterQueue", {}
    [flavor_quota] = group["flavors"]
    flavor = by_kind["ResourceFlavor"][("", flavor_quota["name"])]
    count = job["spec"].get("parallelism", 1)
    for r in flavor_quota["resources"]:
        if r["name"] in requests and _quantity(requests[r["name"]]) * count > _quantity(r["nominalQuota"]):
            return f"insufficient quota for {r['name']} in flavor {flavor['metadata']['name']}", {}
    node_labels = flavor.get("spec", {}).get("nodeLabels", {})
    selector_on_flavor_keys = {k: v for k, v in pod["spec"].get("nodeSelector", {}).items() if k in node_labels}
    if any(node_labels[k] != v for k, v in selector_on_flavor_keys.items()):
        return f"flavor {flavor['metadata']['name']} doesn't match node affinity", {}
    annotations = pod.get("metadata", {}).get("annotations", {})
    level = annotations.get(KUEUE_REQUIRED_TOPOLOGY) or annotations.get(KUEUE_SLICE_REQUIRED_TOPOLOGY)
    if level is not None:
        topology = by_kind.get("Topology", {}).get(("", flavor.get("spec", {}).get("topologyName", "")))
        if topology is None or level not in [lv["nodeLabel"] for lv in topology["spec"]["levels"]]:
            return f'Flavor "{flavor["metadata"]["name"]}" does not contain the requested level', {}
    return "", flavor


def _quantity(value: int | str) -> float:
    text = str(value)
    for suffix, factor in (("Gi", 2**30), ("Mi", 2**20)):
        if text.endswith(suffix):
            return float(text[:-2]) * factor
    return float(text)


def _publisher(name: str) -> list[dict]:
    return [o for o in yaml.safe_load_all((KUEUE / name).read_text()) if o]


def test_the_chain_on_the_publishers_example() -> None:
    """single-clusterqueue-setup.yaml with sample-job.yaml: the Job (3 pods of 1 cpu, 200Mi) in ``default`` reaches
    default-flavor; each broken link gives Kueue's reason."""
    setup = _publisher("single-clusterqueue-setup.yaml")
    [sample] = _publisher("sample-job.yaml")
    sample["metadata"]["name"] = "sample-job"
    namespaces = {"default": {"kubernetes.io/metadata.name": "default"}}
    reason, flavor = admission_chain(sample, setup, namespaces)
    assert reason == "" and flavor["metadata"]["name"] == "default-flavor"
    unlabelled = copy.deepcopy(sample)
    del unlabelled["metadata"]["labels"]
    assert admission_chain(unlabelled, setup, namespaces)[0].startswith("not managed by Kueue")
    elsewhere = copy.deepcopy(sample)
    elsewhere["metadata"]["namespace"] = "team-a"
    assert admission_chain(elsewhere, setup, namespaces)[0] == "LocalQueue user-queue doesn't exist"
    gpu = copy.deepcopy(sample)
    gpu["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "2"
    assert admission_chain(gpu, setup, namespaces)[0] == "resource example.com/gpu unavailable in ClusterQueue"
    big = copy.deepcopy(sample)
    big["spec"]["parallelism"] = 10   # 10 cpu > nominalQuota 9
    assert admission_chain(big, setup, namespaces)[0] == "insufficient quota for cpu in flavor default-flavor"


TRAINING_NS = {eks_manifests.TRAINING_NAMESPACE: {"kubernetes.io/metadata.name": eks_manifests.TRAINING_NAMESPACE},
               eks_manifests.SERVING_NAMESPACE: {"kubernetes.io/metadata.name": eks_manifests.SERVING_NAMESPACE}}


def test_the_placement_objects_validate_against_kueues_crds() -> None:
    from tests.unit.test_sharing_manifests import kueue_valid

    objects = eks_manifests.placement_objects(ultra(12))
    assert [o["kind"] for o in objects] == ["Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"]
    for obj in objects:
        kueue_valid(obj)
    [topology] = [o for o in objects if o["kind"] == "Topology"]
    assert crd_rules(topology["spec"]["levels"]) == []


@pytest.mark.parametrize("nodes", [4, 8, 12])
def test_a_job_outside_a_pool_reaches_the_ultraserver_topology(nodes: int) -> None:
    """The plain training Job of 1, 2 and 3 UltraServers on a device-plugin UltraServer node group of 12 nodes is
    queued on the group's placement queue and reaches a flavor whose Topology has the level its annotations name; in
    serving's namespace it would not be admitted, and without its label Kueue would not manage it."""
    group = ultra(12)
    objects = eks_manifests.placement_objects(group)
    the_job = job(group, nodes)
    assert the_job["metadata"]["labels"][QUEUE_LABEL] == eks_manifests.placement_name(group)
    reason, flavor = admission_chain(the_job, objects, TRAINING_NS)
    assert reason == "" and flavor["spec"]["topologyName"] == eks_manifests.placement_name(group)
    moved = copy.deepcopy(the_job)
    moved["metadata"]["namespace"] = eks_manifests.SERVING_NAMESPACE
    assert admission_chain(moved, objects, TRAINING_NS)[0].startswith("LocalQueue")
    queue_there = copy.deepcopy(objects)
    queue_there[-1]["metadata"]["namespace"] = eks_manifests.SERVING_NAMESPACE   # a LocalQueue there: still refused
    assert admission_chain(moved, queue_there, TRAINING_NS)[0] == \
        "workload namespace doesn't match ClusterQueue selector"


def test_the_placement_queue_places_whole_ultraservers_or_waits() -> None:
    """Through the placement flavor's own Topology and node labels, the model of TAS above: a 2-UltraServer Job on 3
    UltraServers with one node of us-1 partly used goes to us-0 and us-2; with one node of each partly used, it waits
    (the same Job without the slice annotations would split over three)."""
    group = ultra(12)
    topology, flavor, *_ = eks_manifests.placement_objects(group)
    levels = [lv["nodeLabel"] for lv in topology["spec"]["levels"]]
    ann = pod_annotations(job(group, 8))
    got = place(ultraservers(3, busy={(1, 0): 4}), levels, ann, 8, 16, node_labels=flavor["spec"]["nodeLabels"])
    assert servers_of(got) == {"us-0": 4, "us-2": 4}
    scattered = ultraservers(3, busy={(0, 0): 4, (1, 1): 4, (2, 2): 4})
    got = place(scattered, levels, ann, 8, 16, node_labels=flavor["spec"]["nodeLabels"])
    assert got.reason == 'topology "default" doesn\'t allow to fit any of 2 slice(s)'


def test_the_placement_queue_owns_the_whole_node_group_and_nothing_else() -> None:
    """Quota: the node group's every device, vCPU, GiB and EFA interface, no cohort (nothing lent or borrowed), no
    preemption; a Job of the whole group fits, one node more does not (a 16-node job on a 12-node group)."""
    group = ultra(12)
    objects = eks_manifests.placement_objects(group)
    [cq] = [o for o in objects if o["kind"] == "ClusterQueue"]
    assert "cohortName" not in cq["spec"]
    quota = {r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quota == {"aws.amazon.com/neuron": 12 * 16, "cpu": 12 * 192, "memory": "24576Gi",
                     "vpc.amazonaws.com/efa": 12 * 16}
    assert admission_chain(job(group, 12), objects, TRAINING_NS)[0] == ""
    bigger = eks_manifests.training_job(ultra(16), nodes=16)[-1]
    assert admission_chain(bigger, objects, TRAINING_NS)[0].startswith("insufficient quota for aws.amazon.com/neuron")


# --------------------------------------------------- DRA node groups: one UltraServer per Job, never queued
#
# Kueue v0.19.2 (facts.kueue.TAS_DRA): a ResourceClaimTemplate's DeviceClass must be mapped in the Configuration's
# resources.deviceClassMappings, else the workload is inadmissible; allocationMode All is refused
# (pkg/dra/claims.go GetResourceRequestsForResourceClaimTemplates, countDevicesPerClass); TAS sizes a pod from its
# containers' requests only (tas_flavorassigner.go podSetTopologyRequest), and the DRA KEP says TAS does not work
# with it.


def dra_quota(pod_spec: dict, templates: dict[str, dict], mappings: dict[str, str]) -> dict[str, int] | str:
    """Logical resource -> devices per pod, or the field error (claims.go, the rules its test cases below show)."""
    out: dict[str, int] = {}
    for j, claim in enumerate(pod_spec.get("resourceClaims", [])):
        spec = templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]
        for i, req in enumerate(spec["devices"]["requests"]):
            exactly = req["exactly"]
            if exactly.get("allocationMode") == "All":
                return f"spec.podSets[0].template.spec.resourceClaims[{j}].devices.requests[{i}].exactly.allocationMode"
            logical = mappings.get(exactly["deviceClassName"])
            if logical is None:
                return f"spec.podSets[0].template.spec.resourceClaims[{j}].resourceClaimTemplateName"
            out[logical] = out.get(logical, 0) + exactly.get("count", 1)
    return out


def _template(name: str, device_class: str, count: int, mode: str = "ExactCount") -> dict:
    exactly: dict = {"deviceClassName": device_class, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    return {"metadata": {"name": name}, "spec": {"spec": {"devices": {"requests": [
        {"name": "device-request", "exactly": exactly}]}}}}


def test_the_publishers_dra_cases() -> None:
    """pkg/dra/claims_test.go Test_GetResourceRequests: claim-tmpl-1 asks 2 devices of test-deviceclass-1 ->
    "Single claim template with single device": {res-1: 2}; "Unmapped DeviceClass returns error": a NotFound at
    ...resourceClaims[0].resourceClaimTemplateName; "AllocationMode All returns error": Invalid at
    ...resourceClaims[0].devices.requests[0].exactly.allocationMode."""
    templates = {"claim-tmpl-1": _template("claim-tmpl-1", "test-deviceclass-1", 2),
                 "claim-tmpl-all": _template("claim-tmpl-all", "test-deviceclass-1", 0, "All")}
    pod = {"resourceClaims": [{"name": "req-1", "resourceClaimTemplateName": "claim-tmpl-1"}]}
    mapped = {"test-deviceclass-1": "res-1", "test-deviceclass-2": "res-2"}
    assert dra_quota(pod, templates, mapped) == {"res-1": 2}
    assert dra_quota(pod, templates, {}) == "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName"
    all_pod = {"resourceClaims": [{"name": "req-all", "resourceClaimTemplateName": "claim-tmpl-all"}]}
    assert dra_quota(all_pod, templates, {"test-deviceclass-1": "res-1"}) == \
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.allocationMode"


def dra_ultra(count: int) -> NeuronNodegroupSettings:
    return NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=count, allow_unlisted_region=True,
                                   capacity=Capacity.capacity_block(resource_group_arn=BLOCKS), device_plugin=False,
                                   dra=True)


def test_a_dra_job_would_be_inadmissible_on_kueue_as_installed_so_it_is_not_queued() -> None:
    """The kit's DRA Job (its claim template: eks.manifests.neuron_claim_template) under Kueue's chart configuration
    (no deviceClassMappings; the kit passes the chart no values) is refused at its claim; its containers request no
    Neuron device, so TAS would not count them either. The kit therefore queues no DRA Job: one UltraServer, placed
    by required affinity, no queue label."""
    group = dra_ultra(8)
    claim, _, the_job = eks_manifests.training_job(group, nodes=4)
    pod = the_job["spec"]["template"]["spec"]
    assert dra_quota(pod, {claim["metadata"]["name"]: claim}, {}) == \
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName"
    assert "aws.amazon.com/neuron" not in pod["containers"][0]["resources"]["requests"]
    assert QUEUE_LABEL not in the_job["metadata"]["labels"]
    assert admission_chain(the_job, [], TRAINING_NS)[0].startswith("not managed by Kueue")
    [term] = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == ULTRASERVER_SERVER_LABEL.format(size=4)
    assert not eks_manifests.places_whole_ultraservers(group) and eks_manifests.places_whole_ultraservers(ultra(8))


@pytest.mark.parametrize(("group", "nodes", "queue", "why"), [
    (dra_ultra(8), 8, None, "node group ultra hands out its devices by DRA"),
    (dra_ultra(12), 12, None, "node group ultra hands out its devices by DRA"),
    (dra_ultra(8), 8, "rainier-training", "node group ultra hands out its devices by DRA"),  # a queue changes nothing
])
def test_a_dra_job_of_several_ultraservers_is_refused(group: NeuronNodegroupSettings, nodes: int, queue: str | None,
                                                     why: str) -> None:
    with pytest.raises(ValueError) as caught:
        eks_manifests.training_job(group, nodes=nodes, queue=queue)
    text = str(caught.value)
    assert text.startswith(f"nodes: got {nodes}; allowed: 4 (one UltraServer of trn2u.48xlarge)") and why in text


def test_the_examples_on_a_dra_ultraserver_group_take_one_ultraserver() -> None:
    """`neuronfleet eks examples` on a DRA node group of two UltraServers writes a one-UltraServer Job (the most that
    lands whole there), not a refusal; on a device-plugin one, a Job of the whole group on its placement queue."""
    from neuronfleet.settings.eks import NeuronEksClusterSettings

    for group, nodes, queue in ((dra_ultra(8), 4, None), (ultra(8), 8, eks_manifests.placement_name(ultra(8)))):
        files = eks_manifests.examples(NeuronEksClusterSettings(node_groups=(group,)), inference_image="x")
        [the_job] = [o for o in files["training-job.yaml"] if o["kind"] == "Job"]
        assert the_job["spec"]["parallelism"] == nodes
        assert the_job["metadata"]["labels"].get(QUEUE_LABEL) == queue

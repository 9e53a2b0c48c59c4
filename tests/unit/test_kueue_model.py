"""What the shared pool relies on Kueue (v0.19.2, kubernetes-sigs/kueue @ 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb)
and Kubernetes' Job controller doing, as a small model whose every case is the publisher's own test case (its name
in each test's docstring, its inputs and expected outputs copied), then the same model asked about the kit's own
Kueue objects (neuronfleet.sharing.manifests.kueue_objects).

The model is not Kueue: it is a reading of the cited functions, held to the publisher's cases so that a reading
that disagrees with them fails here. Where no public test covers a behaviour the kit relies on, the kit's test
composes two publisher cases and says so (docs/sharing.md, "What is not confirmed offline").

Sources (paths at the commit above unless said):

- quota: pkg/cache/scheduler/resource_node.go (localQuota = nominal - lendingLimit; the cohort holds the lent part;
  ``available()`` = local free + the parent's, capped by borrowingLimit);
- activity: pkg/cache/scheduler/clusterqueue.go ``updateClusterQueue`` (``isStopped = stopPolicy != None``),
  ``updateQueueStatus``, snapshot.go ``skipInactiveCQReason`` (inactive ClusterQueues are left out of the snapshot);
- reclaim: pkg/scheduler/preemption/classical/hierarchical_preemption.go ``collectCandidatesForHierarchicalReclaim``
  (candidates from the snapshot's ClusterQueues above their nominal quota, by reclaimWithinCohort),
  common/preemption_policy.go ``SatisfiesPreemptionPolicy``;
- eviction: pkg/controller/jobframework/reconciler.go ``stopJob`` -> pkg/controller/jobs/job/job_controller.go
  ``(*Job).Stop`` (``spec.suspend = true``);
- the Job controller (kubernetes/kubernetes pkg/controller/job/job_controller.go ``manageJob``: a suspended Job's
  pods lose their tracking finalizer before deletion and are never counted failed), pod_failure_policy.go;
- topology-aware scheduling: pkg/controller/tas/non_tas_usage_controller.go (pods Kueue does not manage count
  against their node), pkg/cache/scheduler/tas_flavor.go ``snapshot`` (``addNonTASUsage``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from neuronfleet.facts.eks_labels import NEURON_RESOURCE
from neuronfleet.settings.eks import NeuronNodegroupSettings
from neuronfleet.sharing import manifests
from neuronfleet_contract.pool_schedule import PoolSchedule

# ------------------------------------------------------------------------------------------------- the model


@dataclass
class CQ:
    name: str
    nominal: int
    borrowing: int | None = None
    lending: int | None = None
    reclaim: str = "Never"
    within: str = "Never"
    stop: str = "None"
    flavor_exists: bool = True

    @property
    def active(self) -> bool:
        """clusterqueue.go: stopped (any stopPolicy but None) or a missing flavor -> pending, not active."""
        return self.stop == "None" and self.flavor_exists

    @property
    def local(self) -> int:
        """resource_node.go: the quota the ClusterQueue keeps (nominal less its lendingLimit; 0 lends it all)."""
        return self.nominal - self.lending if self.lending is not None else 0


@dataclass(frozen=True)
class WL:
    name: str
    cq: str
    priority: int
    amount: int


@dataclass
class Cohort:
    queues: dict[str, CQ]
    admitted: list[WL] = field(default_factory=list)

    def usage(self, cq: str, without: frozenset[str] = frozenset()) -> int:
        return sum(w.amount for w in self.admitted if w.cq == cq and w.name not in without)

    def snapshot(self) -> tuple[set[str], set[str]]:
        """snapshot.go: (the active ClusterQueues, InactiveClusterQueueSets)."""
        return ({n for n, q in self.queues.items() if q.active}, {n for n, q in self.queues.items() if not q.active})

    def available(self, cq: str, without: frozenset[str] = frozenset()) -> int:
        """resource_node.go available(): every child's usage counts in the cohort, active or not (cache
        accumulateFromChild)."""
        quota = sum(q.nominal - q.local for q in self.queues.values())
        used = sum(max(self.usage(n, without) - q.local, 0) for n, q in self.queues.items())
        q = self.queues[cq]
        mine = self.usage(cq, without)
        parent = quota - used
        if q.borrowing is not None:
            parent = min(parent, q.borrowing - max(mine - q.local, 0))
        return max(q.local - mine, 0) + max(parent, 0)

    def preempt(self, incoming: WL) -> list[str]:
        """Classical reclaim: candidates in the snapshot's other ClusterQueues above their nominal quota whose
        priority the preemptor's reclaimWithinCohort allows (LowerPriority: strictly lower; Any; Never: none), then
        its own queue's by withinClusterQueue; lowest priority first, until the incoming workload fits; none at all
        when it would not fit with every candidate gone."""
        if self.available(incoming.cq) >= incoming.amount:
            return []
        active, _ = self.snapshot()
        me = self.queues[incoming.cq]

        def allows(policy: str, w: WL) -> bool:
            return policy == "Any" or (policy == "LowerPriority" and w.priority < incoming.priority)

        others = [w for w in self.admitted if w.cq != incoming.cq and w.cq in active
                  and self.usage(w.cq) > self.queues[w.cq].nominal and allows(me.reclaim, w)]
        own = [w for w in self.admitted if w.cq == incoming.cq and allows(me.within, w)]
        chosen: list[str] = []
        for w in sorted(others, key=lambda w: w.priority) + sorted(own, key=lambda w: w.priority):
            chosen.append(w.name)
            if self.available(incoming.cq, frozenset(chosen)) >= incoming.amount:
                return chosen
        return []


def evict(reason: str) -> dict[str, object]:
    """jobframework reconciler.go "handle eviction" -> stopJob -> (*Job).Stop: the Job suspended; the workload
    requeued at once only when preempted (workload_controller.go), else when its queue or ``active`` comes back."""
    return {"suspend": True, "requeued": reason in ("Preempted", "InCohortReclamation"), "reason": reason}


def sync_suspended(active: int, failed: int) -> dict[str, object]:
    """kubernetes job_controller.go manageJob on a suspended Job: each active pod's tracking finalizer removed
    (a patch), then the pod deleted; pods without the finalizer are never counted (trackJobStatusAndRemoveFinalizers)."""
    return {"deletions": active, "pod_patches": active, "active": 0, "failed": failed,
            "condition": ("Suspended", "True", "JobSuspended", "Job suspended")}


def match_pod_failure_policy(rules: list[dict], conditions: list[tuple[str, str]], exit_code: int | None = None
                             ) -> tuple[bool, str | None]:
    """pod_failure_policy.go matchPodFailurePolicy: the first rule matched decides; Ignore counts no failure.
    Returns (count failed, action)."""
    for rule in rules:
        on_conditions = rule.get("onPodConditions", [])
        codes = rule.get("onExitCodes")
        hit = any((c["type"], c.get("status", "True")) in conditions for c in on_conditions) or (
            codes is not None and exit_code is not None and (exit_code in codes["values"]) == (codes["operator"] == "In"))
        if hit:
            return rule["action"] != "Ignore", rule["action"]
    return True, None


@dataclass
class Node:
    name: str
    allocatable: int
    non_tas: int = 0
    """Requests of bound pods Kueue does not manage (DaemonSets, static pods): non_tas_usage_controller.go."""
    tas: int = 0


def tas_fits(nodes: list[Node], pods: int, per_pod: int) -> bool:
    """tas_flavor_snapshot: each pod on one node, a node's free capacity its allocatable less TAS and non-TAS
    usage; the workload is admitted only if every pod fits."""
    fits = sum((n.allocatable - n.non_tas - n.tas) // per_pod for n in nodes)
    return fits >= pods


# -------------------------------------------------------------------- the model on the publisher's own cases

DEFAULT = {"c1": dict(nominal=6, borrowing=6, reclaim="LowerPriority", within="LowerPriority"),
           "c2": dict(nominal=6, borrowing=6, reclaim="Any", within="Never")}
LEND = {"lend1": dict(nominal=6, lending=4, reclaim="LowerPriority", within="LowerPriority"),
        "lend2": dict(nominal=6, lending=2, reclaim="LowerPriority", within="LowerPriority")}


def cohort(queues: dict[str, dict], admitted: list[WL]) -> Cohort:
    return Cohort({n: CQ(n, **kw) for n, kw in queues.items()}, list(admitted))


def test_reclaim_quota_from_borrower() -> None:
    """Kueue pkg/scheduler/preemption/preemption_test.go TestPreemption "reclaim quota from borrower":
    c1-low (-1, 3 cpu) in c1; c2-mid (0, 3) and c2-high (1, 6) in c2, which borrows; incoming prio 1, 3 cpu to c1
    -> wantPreempted 1: c2-mid (InCohortReclamation)."""
    c = cohort(DEFAULT, [WL("c1-low", "c1", -1, 3), WL("c2-mid", "c2", 0, 3), WL("c2-high", "c2", 1, 6)])
    assert c.preempt(WL("in", "c1", 1, 3)) == ["c2-mid"]


def test_reclaim_quota_from_lender() -> None:
    """TestPreemption "reclaim quota from lender": lend1 (6, lendingLimit 4), lend2 (6, lendingLimit 2);
    lend1-low (-1, 3) in lend1; lend2-mid (0, 3), lend2-high (1, 4) in lend2; incoming prio 1, 3 cpu to lend1
    -> only lend2-mid preempted."""
    c = cohort(LEND, [WL("lend1-low", "lend1", -1, 3), WL("lend2-mid", "lend2", 0, 3),
                      WL("lend2-high", "lend2", 1, 4)])
    assert c.preempt(WL("in", "lend1", 1, 3)) == ["lend2-mid"]


def test_cannot_preempt_beyond_the_lending_limit() -> None:
    """TestPreemption "cannot preempt from other ClusterQueues if exceeds requestable quota including lending
    limit": lend2-low (-1, 10) in lend2; incoming 9 cpu to lend1 -> no preemption (lend1 reaches 6 + 2 = 8)."""
    c = cohort(LEND, [WL("lend2-low", "lend2", -1, 10)])
    assert c.preempt(WL("in", "lend1", 0, 9)) == []


def test_do_not_reclaim_from_same_priority_under_lower_priority() -> None:
    """TestPreemption "do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority":
    c1 (0, 2 cpu) in c1; c2-1 and c2-2 (0, 4 each) in c2, which borrows; incoming (0, 4) to c1 -> none preempted."""
    c = cohort(DEFAULT, [WL("c1", "c1", 0, 2), WL("c2-1", "c2", 0, 4), WL("c2-2", "c2", 0, 4)])
    assert c.preempt(WL("in", "c1", 0, 4)) == []


def test_reclaim_from_same_priority_under_any() -> None:
    """TestPreemption "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny": c1-1 (0, 4) and
    c1-2 (1, 4) in c1, which borrows; c2 (0, 2) in c2; incoming (0, 4) to c2 (reclaimWithinCohort Any) ->
    wantPreempted 1: c1-1."""
    c = cohort(DEFAULT, [WL("c1-1", "c1", 0, 4), WL("c1-2", "c1", 1, 4), WL("c2", "c2", 0, 2)])
    assert c.preempt(WL("in", "c2", 0, 4)) == ["c1-1"]


def test_preempt_when_lending_limit_enabled() -> None:
    """Kueue test/integration/singlecluster/scheduler/preemption_test.go "With lending limit" / "Should be able to
    preempt when lending limit enabled": prod-cq cpu 5 lendingLimit 4 (Any); dev-cq cpu 5; wl-1 (0, 4) and wl-2
    (1, 5) admitted in dev, which borrows 4; wl-3 (4 cpu) in prod -> wl-1 preempted, then wl-3 admitted."""
    c = cohort({"prod": dict(nominal=5, lending=4, reclaim="Any"), "dev": dict(nominal=5)},
               [WL("wl-1", "dev", 0, 4), WL("wl-2", "dev", 1, 5)])
    assert c.preempt(WL("wl-3", "prod", 0, 4)) == ["wl-1"]
    c.admitted = [w for w in c.admitted if w.name != "wl-1"]
    assert c.available("prod") >= 4


def test_hierarchical_cohort_respects_lending_limit_when_borrowing() -> None:
    """Kueue pkg/scheduler/scheduler_test.go TestSchedule "hierarchical cohort respects lending limit when
    borrowing": lender 10 cpu, lendingLimit 3; borrower 5 (borrowingLimit 10) using 5; a pending 4 -> inadmissible;
    "hierarchical cohort allows borrowing up to lending limit": lendingLimit 5, borrowing 5 -> admitted."""
    c = cohort({"lender": dict(nominal=10, lending=3), "borrower": dict(nominal=5, borrowing=10)},
               [WL("used", "borrower", 0, 5)])
    assert c.available("borrower") == 3 < 4
    c = cohort({"lender": dict(nominal=10, lending=5), "borrower": dict(nominal=5, borrowing=10)},
               [WL("used", "borrower", 0, 5)])
    assert c.available("borrower") == 5


def test_inactive_cluster_queues_are_not_in_the_snapshot() -> None:
    """Kueue pkg/cache/scheduler/snapshot_test.go TestSnapshot "inactive clusterQueues": a ClusterQueue whose
    flavor does not exist -> InactiveClusterQueueSets {flavor-nonexistent-cq}, no ClusterQueue snapshot; and
    cache_test.go TestClusterQueueReadiness "stopped": StopPolicy HoldAndDrain -> not active ("is stopped")."""
    c = cohort({"flavor-nonexistent-cq": dict(nominal=100, flavor_exists=False)}, [])
    assert c.snapshot() == (set(), {"flavor-nonexistent-cq"})
    c = cohort({"cq": dict(nominal=5, stop="HoldAndDrain")}, [])
    assert c.snapshot() == (set(), {"cq"})


@pytest.mark.parametrize(("reason", "requeued"), [("Preempted", True), ("LocalQueueStopped", False),
                                                  ("Deactivated", False)])
def test_every_eviction_suspends_the_job(reason: str, requeued: bool) -> None:
    """Kueue pkg/controller/jobs/job/job_controller_test.go TestReconciler "when workload is evicted due to
    preemption, job gets suspended" (Requeued=True, Preempted), "when workload is evicted due to local queue
    stopped, job gets suspended" (Requeued=False, LocalQueueStopped: requeued when the LocalQueue restarts,
    workload_controller.go LocalQueueRestarted) and "... spec.active field being false ..." (Deactivated)."""
    assert evict(reason) == {"suspend": True, "requeued": requeued, "reason": reason}


def test_suspending_a_job_counts_no_failure() -> None:
    """kubernetes pkg/controller/job/job_controller_test.go TestControllerSyncJob "suspending a job with satisfied
    expectations": suspend, parallelism 2, 2 active pods, completions 4, backoffLimit 6 -> expectedDeletions 2,
    expectedPodPatches 2, expectedActive 0, expectedFailed 0, condition Suspended=True JobSuspended "Job
    suspended"."""
    assert sync_suspended(active=2, failed=0) == {"deletions": 2, "pod_patches": 2, "active": 0, "failed": 0,
                                                  "condition": ("Suspended", "True", "JobSuspended",
                                                                "Job suspended")}


def test_ignore_rule_matched_for_pod_conditions() -> None:
    """kubernetes pkg/controller/job/pod_failure_policy_test.go TestMatchPodFailurePolicy "ignore rule matched for
    pod conditions": rule Ignore on DisruptionTarget=True; a failed pod with that condition -> wantCountFailed
    false, wantAction Ignore."""
    rules = [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
    assert match_pod_failure_policy(rules, [("DisruptionTarget", "True")]) == (False, "Ignore")
    assert match_pod_failure_policy(rules, [], exit_code=1) == (True, None)


def test_a_non_tas_pod_uses_the_nodes_capacity() -> None:
    """Kueue pkg/scheduler/scheduler_tas_test.go TestScheduleForTAS "workload does not get scheduled as the node
    capacity is already used by a non-TAS pod": node x1 allocatable 1 cpu; a non-TAS pod bound to x1 requesting
    600m; a workload of 1 pod x 1 cpu -> inadmissible ("doesn't allow to fit any of 1 pod(s)"). In millicores."""
    assert not tas_fits([Node("x1", 1000, non_tas=600)], pods=1, per_pod=1000)
    assert tas_fits([Node("x1", 1000)], pods=1, per_pod=1000)


# ---------------------------------------------------------------------------------- the kit's own objects

GROUP = NeuronNodegroupSettings(name="pool", instance_type="trn2.48xlarge", count=4)
SCHEDULE = PoolSchedule.build(pool="rainier", time_zone="America/New_York", day=["07:00-23:00"], pool_devices=64,
                              replica_devices=4, day_replicas=16, night_floor=4, checkpoint_deadline=30)


def kit_cohort(admitted: list[WL], *, training_stop: str = "None") -> Cohort:
    """The model's cohort from the kit's two ClusterQueues (Neuron devices only); ``training_stop``: a stopPolicy
    on the training ClusterQueue (the kit never sets one; the old design did)."""
    queues = {}
    for q in (o for o in manifests.kueue_objects(SCHEDULE, GROUP) if o["kind"] == "ClusterQueue"):
        [neuron] = [r for r in q["spec"]["resourceGroups"][0]["flavors"][0]["resources"] if r["name"] == NEURON_RESOURCE]
        role = q["metadata"]["name"].rsplit("-", 1)[1]
        queues[role] = CQ(role, neuron["nominalQuota"], neuron.get("borrowingLimit"), neuron.get("lendingLimit"),
                          q["spec"]["preemption"]["reclaimWithinCohort"], q["spec"]["preemption"]["withinClusterQueue"],
                          q["spec"].get("stopPolicy", training_stop if role == "training" else "None"))
    return Cohort(queues, admitted)


def night(training_stop: str = "None") -> Cohort:
    """The night: inference at its floor (4 x 4 devices), the example training Job (every lent node) admitted."""
    job = manifests.training_job(SCHEDULE, GROUP)[1]["spec"]
    return kit_cohort([WL(f"serve-{i}", "inference", manifests.INFERENCE_PRIORITY, 4) for i in range(4)]
                      + [WL("train", "training", manifests.TRAINING_PRIORITY, 16 * job["parallelism"])],
                      training_stop=training_stop)


def test_the_kits_training_job_is_admissible_and_inference_reclaims_from_it() -> None:
    """The kit's queues: the example Job fits the lend (TestSchedule "hierarchical cohort allows borrowing up to
    lending limit"), and an inference pod above the floor reclaims from it (TestPreemption "reclaim quota from
    lender": inference lends, training borrows, inference's reclaimWithinCohort LowerPriority, training lower)."""
    empty = kit_cohort([WL(f"serve-{i}", "inference", manifests.INFERENCE_PRIORITY, 4) for i in range(4)])
    job = manifests.training_job(SCHEDULE, GROUP)[1]["spec"]
    assert empty.available("training") >= 16 * job["parallelism"] == 48
    c = night()
    assert c.preempt(WL("serve-4", "inference", manifests.INFERENCE_PRIORITY, 4)) == ["train"]


def test_the_old_held_cluster_queue_hid_training_from_reclaim() -> None:
    """Why the old design failed (issue 39, finding 1), composed from two publisher cases: a ClusterQueue with a
    stopPolicy is inactive and left out of the snapshot (TestSnapshot "inactive clusterQueues", TestClusterQueue
    Readiness "stopped") while its usage still counts in the cohort (resource_node.go), and reclaim takes its
    candidates from the snapshot (TestPreemption "reclaim quota from lender"): the held training queue's Job is no
    candidate, and the morning's inference pod waits. No public test covers the two together (said in
    docs/sharing.md)."""
    held = night(training_stop="Hold")
    assert "training" in held.snapshot()[1]
    assert held.available("inference") == 0
    assert held.preempt(WL("serve-4", "inference", manifests.INFERENCE_PRIORITY, 4)) == []
    # the kit never stops a ClusterQueue: the same morning reclaims
    assert night().preempt(WL("serve-4", "inference", manifests.INFERENCE_PRIORITY, 4)) == ["train"]


def test_a_whole_node_pod_waits_for_a_whole_free_node() -> None:
    """TAS on the kit's pool (TestScheduleForTAS's non-TAS case, in Neuron devices): 4 nodes of 16; an inference
    replica left on each of two nodes -> only 2 whole nodes free: the 3-node Job waits (and holds no quota), a
    2-node one is admitted."""
    nodes = [Node("a", 16, tas=4), Node("b", 16, tas=4), Node("c", 16), Node("d", 16)]
    assert not tas_fits(nodes, pods=3, per_pod=16)
    assert tas_fits(nodes, pods=2, per_pod=16)

"""The shared pool's schedule function (lambdas/pool_schedule) over a day: moto for the announcement ledger, SNS and
CloudWatch, an in-process Kubernetes API for the cluster (the inference autoscaler's bounds, the training
LocalQueue, the pool's pods, Kueue admitting, draining and reclaiming), a fake clock. Night borrow, checkpoint
signal, morning drain; the
missed checkpoint announced once; a failed call named and converged by the next run; the EKS token's shape; and
every call the function made over the day allowed by the kit's RBAC for its group, every rule of it used (the grant is
taken from the code: neuronfleet.sharing.manifests.schedule_access), nothing in kube-system or on serving's pods."""

from __future__ import annotations

import base64
import contextlib
import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from neuronfleet_runtime.announcements import REPEAT_NOTE, Ledger, Unfinished
from neuronfleet_runtime.topic import Topic

from neuronfleet.eks import rbac
from neuronfleet.eks.manifests import SERVING_NAMESPACE as SERVING
from neuronfleet.eks.manifests import TRAINING_NAMESPACE as TRAINING
from neuronfleet.lambdas.pool_schedule import handler as h
from neuronfleet.lambdas.pool_schedule.adapters import KubeApi, KubeError, Metrics, Pool, eks_token
from neuronfleet.sharing import manifests as sharing
from neuronfleet_contract.pool_schedule import (
    ANNOTATION_CHECKPOINT_BY,
    ANNOTATION_CHECKPOINTED_AT,
    LABEL_POOL,
    LABEL_ROLE,
    POOL_NAMESPACE,
    PoolSchedule,
    PoolScheduleConfig,
    iso,
    parse_iso,
)
from tests.fault_injection import Clock, Fault, Faulty, client_error, timeout
from tests.moto_support import alerts_inbox, announcements_table

REGION = "us-east-2"
HPA = f"/apis/autoscaling/v2/namespaces/{SERVING}/horizontalpodautoscalers/serve"
QUEUE = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{TRAINING}/localqueues/rainier-training"
SCHEDULE = PoolSchedule.build(pool="rainier", time_zone="America/New_York", day=["07:00-23:00"], pool_devices=64,
                              replica_devices=4, day_replicas=16, night_floor=4, checkpoint_deadline=30)


class FakeCluster:
    """The Kubernetes API as far as the function uses it, with Kueue's effect: training pods admitted while the
    training queue admits and inference lends two nodes; preempted (deleted) once inference's replicas need them.
    ``ack_after``: the job annotates its pod that long after its signal (None: never)."""

    def __init__(self, *, ack_after: timedelta | None) -> None:
        self.bounds, self.stop = (16, 16), "HoldAndDrain"
        self.training: dict[str, dict[str, Any]] = {}
        self.ack_after = ack_after
        self.now = datetime(2026, 11, 24, tzinfo=UTC)
        self.fail: set[tuple[str, str]] = set()
        self.fail_once: set[tuple[str, str]] = set()
        """Calls that fail once (HTTP 500), then pass."""
        self.before: dict[tuple[str, str], Any] = {}
        """A function run once before a call is served (another run overlapping this one)."""
        self.calls: list[tuple[str, str]] = []
        self.preempted_at: datetime | None = None
        self.reclaimed: list[tuple[str, datetime | None, datetime | None]] = []
        """Each training pod preempted: (name, when it was first annotated, the deadline its annotation gave)."""
        self.queue_notes: dict[str, str] = {}

    @property
    def replicas(self) -> int:
        """Inference's replicas: demand keeps its autoscaler at its maximum."""
        return self.bounds[1]

    @replicas.setter
    def replicas(self, value: int) -> None:
        self.bounds = (min(self.bounds[0], value), value)

    def tick(self, now: datetime) -> None:
        self.now = now
        for pod in self.training.values():
            notes = pod["metadata"]["annotations"]
            signalled = parse_iso(notes.get(ANNOTATION_CHECKPOINT_BY))
            if signalled and self.ack_after is not None and ANNOTATION_CHECKPOINTED_AT not in notes \
                    and "signalled_at" in pod:
                sent = pod["signalled_at"]
                if now >= sent + self.ack_after:
                    notes[ANNOTATION_CHECKPOINTED_AT] = iso(sent + self.ack_after)
        free = 64 - self.replicas * 4
        if self.stop == "None" and not self.training and free >= 32:
            self.training = {n: self._pod(n, "training", 16) for n in ("train-0", "train-1")}
        if self.training and (free < 32 or self.stop == "HoldAndDrain"):  # reclaimed, or drained
            self.reclaimed += [(n, p.get("signalled_at"),
                                parse_iso(p["metadata"]["annotations"].get(ANNOTATION_CHECKPOINT_BY)))
                               for n, p in self.training.items()]
            self.training, self.preempted_at = {}, now

    @staticmethod
    def _pod(name: str, role: str, devices: int) -> dict[str, Any]:
        namespace = TRAINING if role == "training" else SERVING
        return {"metadata": {"name": name, "namespace": namespace, "annotations": {},
                             "labels": {LABEL_POOL: "rainier", LABEL_ROLE: role}},
                "spec": {"nodeName": "node-1", "containers": [{"resources": {"requests": {
                    "aws.amazon.com/neuron": str(devices)}}}]},
                "status": {"phase": "Running"}}

    def send(self, request: urllib.request.Request) -> tuple[int, bytes]:
        assert request.get_header("Authorization") == "Bearer token"
        method, url = request.get_method(), urllib.parse.urlparse(request.full_url)
        path = url.path
        self.calls.append((method, path))
        if (method, path) in self.before:
            self.before.pop((method, path))()
        if (method, path) in self.fail or (method, path) in self.fail_once:
            self.fail_once.discard((method, path))
            return 500, b'{"kind":"Status","message":"etcdserver: request timed out"}'
        body = json.loads(request.data) if request.data else None  # type: ignore[arg-type]
        if path == HPA:
            if method == "PATCH":  # a JSON merge patch of the bounds
                self.bounds = (body["spec"]["minReplicas"], body["spec"]["maxReplicas"])
            return 200, json.dumps({"spec": {"minReplicas": self.bounds[0], "maxReplicas": self.bounds[1]}}).encode()
        if path == QUEUE:
            if method == "PATCH":  # a JSON merge patch (RFC 7386) of the members the function sends
                self.stop = body.get("spec", {}).get("stopPolicy", self.stop)
                self.queue_notes.update(body.get("metadata", {}).get("annotations", {}))
            return 200, json.dumps({"metadata": {"annotations": self.queue_notes},
                                    "spec": {"stopPolicy": self.stop}}).encode()
        if path in (f"/api/v1/namespaces/{SERVING}/pods", f"/api/v1/namespaces/{TRAINING}/pods"):
            selector = urllib.parse.parse_qs(url.query)["labelSelector"][0]
            role = dict(kv.split("=") for kv in selector.split(","))[LABEL_ROLE]
            assert path.split("/")[4] == (TRAINING if role == "training" else SERVING), path
            items = (list(self.training.values()) if role == "training" else
                     [self._pod(f"serve-{i}", "inference", 4) for i in range(self.replicas)])
            return 200, json.dumps({"items": [{k: v for k, v in p.items() if k != "signalled_at"} for p in items]},
                                   default=str).encode()
        if path.startswith(f"/api/v1/namespaces/{TRAINING}/pods/") and method == "PATCH":
            pod = self.training[path.rsplit("/", 1)[1]]
            pod["metadata"]["annotations"].update(body["metadata"]["annotations"])
            pod.setdefault("signalled_at", self.now)
            return 200, b"{}"
        return 404, b'{"kind":"Status","reason":"NotFound"}'


@pytest.fixture
def aws(monkeypatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, inbox = alerts_inbox(sns, sqs)
        ddb = boto3.client("dynamodb", region_name=REGION)
        yield {"sns": sns, "sqs": sqs, "topic": topic, "inbox": inbox, "ddb": ddb, "table": announcements_table(ddb),
               "cw": boto3.client("cloudwatch", region_name=REGION)}


def tools(aws: dict[str, Any], cluster: FakeCluster) -> h.Tools:
    settings = PoolScheduleConfig(schedule=SCHEDULE, cluster_name="nf-eks", endpoint="https://k8s.example",
                                  certificate_authority="Y2E=", namespace=SERVING, deployment="serve",
                                  training_queue="rainier-training", topic_arn=aws["topic"],
                                  ledger_table=aws["table"], training_namespace=TRAINING)
    api = KubeApi(endpoint=settings.endpoint, token=lambda: "token", send=cluster.send)
    return h.Tools(settings=settings, pool=Pool(api, pool="rainier", namespace=SERVING, deployment="serve",
                                                training_queue="rainier-training", training_namespace=TRAINING),
                   ledger=Ledger(aws["ddb"], aws["table"]), topic=Topic(aws["sns"], aws["topic"]),
                   metrics=Metrics(aws["cw"], POOL_NAMESPACE))


def said(aws: dict[str, Any]) -> list[dict[str, Any]]:
    got = aws["sqs"].receive_message(QueueUrl=aws["inbox"], MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in got]


def drive_day(aws: dict[str, Any], cluster: FakeCluster, *, every: timedelta = timedelta(minutes=10)) -> list[str]:
    t = tools(aws, cluster)
    start = datetime(2026, 11, 24, 3, tzinfo=UTC)  # 22:00 New York
    phases = []
    now = start
    while now < start + timedelta(days=1):
        cluster.tick(now)
        phases.append(h.run(t, now=now)["phase"])
        cluster.tick(now)
        now += every
    return phases


def test_a_day_checkpointed_in_time_announces_nothing(aws) -> None:
    cluster = FakeCluster(ack_after=timedelta(minutes=5))
    phases = drive_day(aws, cluster)
    assert {"day", "night", "checkpoint"} <= set(phases)
    assert cluster.preempted_at == datetime(2026, 11, 24, 12, tzinfo=UTC)  # 07:00 New York
    assert cluster.queue_notes == {"neuronfleet/notice-for": "2026-11-24T12:00:00Z",
                                   "neuronfleet/checkpoint-by": "2026-11-24T12:00:00Z"}
    assert cluster.bounds == (16, 16) and cluster.stop == "HoldAndDrain"  # drained; the day's bounds after it
    pod_patches = [c for c in cluster.calls if c[0] == "PATCH" and "/pods/" in c[1]]
    assert sorted(pod_patches) == [("PATCH", f"/api/v1/namespaces/{TRAINING}/pods/train-0"),
                                   ("PATCH", f"/api/v1/namespaces/{TRAINING}/pods/train-1")]  # once each
    assert said(aws) == []
    metrics = aws["cw"].list_metrics(Namespace=POOL_NAMESPACE, MetricName="PoolDevices")["Metrics"]
    assert {d["Value"] for m in metrics for d in m["Dimensions"] if d["Name"] == "Role"} == {
        "inference", "training", "idle"}


def request_of(method: str, path: str) -> rbac.Request:
    """The RBAC request an API call is (Kubernetes docs, "Using RBAC Authorization", Referring to resources: the
    resource as it appears in the URL, ``resource/subresource``; a GET of a collection is ``list``)."""
    parts = path.split("?")[0].strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    namespace = ""
    if rest[:1] == ["namespaces"]:
        namespace, rest = rest[1], rest[2:]
    resource, name, subresource = rest[0], (rest[1] if len(rest) > 1 else ""), (rest[2] if len(rest) > 2 else "")
    verb = {"GET": "get" if name else "list", "PATCH": "patch", "PUT": "update", "DELETE": "delete",
            "POST": "create"}[method]
    return rbac.Request(verb, resource, group, namespace, name, subresource)


SCHEDULE_GROUP = rbac.Subject("arn:aws:sts::444444444444:assumed-role/pool-schedule/fn",
                              (sharing.schedule_group("rainier"), "system:authenticated"))
ACCESS = [*sharing.schedule_access(SCHEDULE, deployment="serve"), *sharing.training_acknowledge_access()]


def test_every_call_of_a_day_is_allowed_and_every_rule_used(aws) -> None:
    """The grant is what the code calls: each call of a day (night borrow, signal, reclaim) is allowed for the
    schedule's group, and each rule it holds allows at least one of them (a rule no call needs would be a grant too
    many)."""
    cluster = FakeCluster(ack_after=timedelta(minutes=5))
    drive_day(aws, cluster)
    calls = {request_of(m, p) for m, p in cluster.calls}
    assert {r.verb for r in calls} == {"get", "list", "patch"}
    refused = [r for r in calls if not rbac.allowed(ACCESS, SCHEDULE_GROUP, r)]
    assert refused == []
    rules = [(o["kind"], rule) for o in ACCESS if o["kind"] in ("Role", "ClusterRole") and
             o["metadata"]["name"] == sharing.schedule_group("rainier") for rule in o["rules"]]
    for kind, rule in rules:
        for verb in rule["verbs"]:
            assert any(rbac.rule_allows(rule, r) and r.verb == verb for r in calls), (kind, rule, verb)


@pytest.mark.parametrize("request_", [
    rbac.Request("patch", "pods", namespace="kube-system", name="neuronfleet-utilisation-ultra-x7k2p"),
    rbac.Request("patch", "pods", namespace=SERVING, name="serve-0"),
    rbac.Request("patch", "pods", namespace="default", name="anything"),
    rbac.Request("patch", "deployments", "apps", SERVING, "serve"),  # the spec (image), not the scale
    rbac.Request("patch", "deployments", "apps", SERVING, "other", "scale"),
    rbac.Request("patch", "deployments", "apps", SERVING, "serve", "scale"),  # the autoscaler's, not the schedule's
    rbac.Request("patch", "clusterqueues", "kueue.x-k8s.io", name="rainier-training"),  # never stopped (issue 39)
    rbac.Request("patch", "horizontalpodautoscalers", "autoscaling", SERVING, "other"),
    rbac.Request("patch", "localqueues", "kueue.x-k8s.io", TRAINING, "other"),
    rbac.Request("patch", "clusterqueues", "kueue.x-k8s.io", name="rainier-inference"),
    rbac.Request("create", "pods", namespace=TRAINING),
    rbac.Request("delete", "pods", namespace=TRAINING, name="train-0"),
    rbac.Request("list", "pods"),  # across namespaces
    rbac.Request("list", "secrets", namespace=TRAINING),
], ids=lambda r: f"{r.verb}-{r.combined_resource}-{r.namespace or 'cluster'}-{r.name}")
def test_what_the_schedule_may_not_do(request_: rbac.Request) -> None:
    assert not rbac.allowed(ACCESS, SCHEDULE_GROUP, request_)


def test_a_missed_checkpoint_is_announced_once(aws) -> None:
    cluster = FakeCluster(ack_after=None)
    drive_day(aws, cluster, every=timedelta(minutes=15))
    [message] = said(aws)
    assert message["Subject"] == "[neuronfleet] rainier: training did not checkpoint before the morning"
    assert f"{TRAINING}/train-0, {TRAINING}/train-1" in message["Message"] and "2026-11-24T12:00:00Z" in message["Message"]
    # a second run at the same morning (a retry, an overlapping run) says nothing more
    cluster.training = {"train-0": FakeCluster._pod("train-0", "training", 16)}
    cluster.replicas = 4
    h.run(tools(aws, cluster), now=datetime(2026, 11, 24, 12, 1, tzinfo=UTC))
    assert said(aws) == []  # nothing new (the first message is in flight, received above)
    missed = aws["cw"].list_metrics(Namespace=POOL_NAMESPACE, MetricName="CheckpointsMissed")["Metrics"]
    assert missed and missed[0]["Dimensions"] == [{"Name": "Pool", "Value": "rainier"}]


def test_a_failed_call_is_named_and_the_next_run_converges(aws) -> None:
    cluster = FakeCluster(ack_after=None)
    night = datetime(2026, 11, 24, 8, tzinfo=UTC)  # 03:00 New York
    cluster.fail = {("PATCH", HPA)}
    t = tools(aws, cluster)
    with pytest.raises(Unfinished) as caught:
        h.run(t, now=night)
    assert "set serve's autoscaler to 4-4 replicas" in str(caught.value) and "HTTP 500" in str(caught.value)
    assert "read the pool" not in str(caught.value)
    assert cluster.stop == "None" and cluster.replicas == 16  # the other step went through
    cluster.fail = set()
    assert h.run(t, now=night + timedelta(minutes=1))["done"] == ["set serve's autoscaler to 4-4 replicas"]
    assert h.run(t, now=night + timedelta(minutes=2))["done"] == []


def test_an_unreadable_pool_changes_nothing(aws) -> None:
    cluster = FakeCluster(ack_after=None)
    cluster.fail = {("GET", QUEUE)}
    with pytest.raises(Unfinished, match="read the pool"):
        h.run(tools(aws, cluster), now=datetime(2026, 11, 24, 8, tzinfo=UTC))
    assert not [c for c in cluster.calls if c[0] == "PATCH"]


def test_kube_api_refuses_what_is_not_a_json_object() -> None:
    api = KubeApi(endpoint="https://k8s.example/", token=lambda: "t", send=lambda r: (200, b"[1]"))
    with pytest.raises(KubeError, match="GET /x: HTTP 200: a JSON list"):
        api.call("GET", "/x")
    api = KubeApi(endpoint="https://k8s.example/", token=lambda: "t", send=lambda r: (200, b"<html>"))
    with pytest.raises(KubeError, match="not JSON"):
        api.call("GET", "/x")

    def down(_: urllib.request.Request) -> tuple[int, bytes]:
        raise TimeoutError("timed out")

    with pytest.raises(KubeError, match="GET /x: timed out"):
        KubeApi(endpoint="https://k8s.example", token=lambda: "t", send=down).call("GET", "/x")


def test_settings_round_trip_through_the_environment() -> None:
    settings = PoolScheduleConfig(schedule=SCHEDULE, cluster_name="nf-eks", endpoint="https://k8s.example",
                                  certificate_authority="Y2E=", namespace=SERVING, deployment="serve",
                                  training_queue="rainier-training", topic_arn="arn:aws:sns:us-east-2:1:a",
                                  ledger_table="announced", fleet="nf-prod", training_namespace=TRAINING)
    assert PoolScheduleConfig.from_environment(settings.to_environment()) == settings
    env = settings.to_environment() | {"POOL_SCHEDULE": json.dumps(SCHEDULE.to_mapping() | {"night_floor": 99})}
    with pytest.raises(ValueError, match=r"POOL_SCHEDULE.*night_floor: got 99; allowed: at most day_replicas"):
        PoolScheduleConfig.from_environment(env)


def test_the_eks_token_is_a_presigned_get_caller_identity(monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    sts = boto3.client("sts", region_name=REGION)
    token = eks_token(sts, "nf-eks")
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    url = base64.urlsafe_b64decode(token[len("k8s-aws-v1."):] + "==").decode()
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    assert query["Action"] == ["GetCallerIdentity"] and query["X-Amz-Expires"] == ["60"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert "sts" in urllib.parse.urlparse(url).netloc
    # the header handler is not left behind on the client
    assert "x-k8s-aws-id" not in urllib.parse.parse_qs(urllib.parse.urlparse(
        sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60)).query)["X-Amz-SignedHeaders"][0]


# ------------------------------------------------- the morning sequence under faults: notify, wait, then reclaim

CHECKPOINT = datetime(2026, 11, 24, 11, 30, tzinfo=UTC)  # 06:30 New York: the window opens
MORNING = datetime(2026, 11, 24, 12, tzinfo=UTC)


def drive(aws: dict[str, Any], cluster: FakeCluster, start: datetime, end: datetime, *, t: h.Tools | None = None,
          skip: tuple[datetime, datetime] | None = None) -> list[str]:
    """One run a minute from ``start`` to ``end`` (none in ``skip``), each failed run's problems collected (the
    next minute's run is its retry)."""
    t = t or tools(aws, cluster)
    problems: list[str] = []
    now = start
    while now < end:
        cluster.tick(now)
        if skip is None or not skip[0] <= now < skip[1]:
            try:
                h.run(t, now=now)
            except Unfinished as error:
                problems += error.problems
        cluster.tick(now)
        now += timedelta(minutes=1)
    return problems


def night_of_training(aws: dict[str, Any], cluster: FakeCluster) -> None:
    drive(aws, cluster, datetime(2026, 11, 24, 8, tzinfo=UTC), datetime(2026, 11, 24, 8, 2, tzinfo=UTC))
    assert set(cluster.training) == {"train-0", "train-1"} and cluster.replicas == 4


def no_reclaim_without_notice(cluster: FakeCluster, *, minutes: int = 29) -> None:
    """What a training user must see: every pod reclaimed was told, and had its checkpoint deadline (less one run
    period) from that moment, and the reclaim came no earlier than the deadline it was given."""
    assert cluster.reclaimed, "the morning reclaimed nothing"
    for name, told, deadline in cluster.reclaimed:
        assert told is not None and deadline is not None, f"{name} reclaimed without notice"
        assert deadline - told >= timedelta(minutes=minutes), (name, told, deadline)
        assert cluster.preempted_at is not None and cluster.preempted_at >= deadline, (name, deadline)


inbox = said  # what reached the topic since the last look (received messages stay hidden)


@pytest.mark.parametrize("resume", [MORNING, MORNING + timedelta(minutes=10), CHECKPOINT + timedelta(minutes=20)])
def test_no_run_in_the_checkpoint_window_still_notifies_then_waits_then_reclaims(aws, resume) -> None:
    """Throttled, failed or disabled from 05:00 New York until ``resume``: the first run after tells the pods and
    records the notice; inference stays at its floor for the whole deadline; then the reclaim."""
    cluster = FakeCluster(ack_after=timedelta(minutes=5))
    night_of_training(aws, cluster)
    drive(aws, cluster, datetime(2026, 11, 24, 8, 2, tzinfo=UTC), MORNING + timedelta(hours=1),
          skip=(datetime(2026, 11, 24, 10, tzinfo=UTC), resume))
    no_reclaim_without_notice(cluster)
    assert cluster.preempted_at == resume + timedelta(minutes=29)
    assert {told for _, told, _ in cluster.reclaimed} == {resume}
    assert cluster.replicas == 16 and inbox(aws) == []  # they acknowledged: nothing to say


@pytest.mark.parametrize("call", [
    ("GET", HPA),
    ("GET", QUEUE),
    ("GET", f"/api/v1/namespaces/{SERVING}/pods"),
    ("GET", f"/api/v1/namespaces/{TRAINING}/pods"),
    ("PATCH", QUEUE),
    ("PATCH", f"/api/v1/namespaces/{TRAINING}/pods/train-0"),
    ("PATCH", HPA),
], ids=lambda c: f"{c[0]}-{c[1].rsplit('/', 1)[-1]}")
@pytest.mark.parametrize("when", [CHECKPOINT, MORNING], ids=["window-opens", "morning"])
def test_a_cluster_call_failing_once_at_each_step_then_the_retry_never_reclaims_without_notice(aws, call, when
                                                                                                 ) -> None:
    """Each call of the pool's API fails once, at the window's first run or (with no run in the window) at the
    morning's; the next minute's run retries. No pod is reclaimed untold or early (a pod told by the retry has its
    deadline less that one run), the missed checkpoint (the job never acknowledges here) is announced once, naming
    each pod as not acknowledging."""
    cluster = FakeCluster(ack_after=None)
    night_of_training(aws, cluster)
    cluster.fail_once = {call}
    problems = drive(aws, cluster, datetime(2026, 11, 24, 8, 2, tzinfo=UTC), MORNING + timedelta(hours=1),
                     skip=(CHECKPOINT, MORNING) if when == MORNING else None)
    assert problems and "HTTP 500" in problems[0] and not cluster.fail_once
    no_reclaim_without_notice(cluster, minutes=28)
    [message] = inbox(aws)
    assert "- did not acknowledge" in message["Message"] and "never notified" not in message["Message"]
    assert f"{TRAINING}/train-0, {TRAINING}/train-1" in message["Message"] and cluster.replicas == 16


def test_a_pod_that_cannot_be_annotated_is_reported_as_never_notified(aws) -> None:
    cluster = FakeCluster(ack_after=timedelta(minutes=5))
    night_of_training(aws, cluster)
    cluster.fail = {("PATCH", f"/api/v1/namespaces/{TRAINING}/pods/train-1")}
    problems = drive(aws, cluster, datetime(2026, 11, 24, 8, 2, tzinfo=UTC), MORNING + timedelta(minutes=5))
    assert any("annotate neuronfleet-training/train-1" in p for p in problems)
    assert cluster.preempted_at == MORNING  # one pod that cannot be told does not hold inference back
    [message] = inbox(aws)
    assert f"- never notified: the schedule function could not annotate them before the deadline (see its errors in " \
           f"its log), so they had no chance to checkpoint: {TRAINING}/train-1" in message["Message"]
    assert "did not acknowledge" not in message["Message"] and "train-0" not in message["Message"]
    def listed(name: str) -> list[Any]:
        return aws["cw"].list_metrics(Namespace=POOL_NAMESPACE, MetricName=name)["Metrics"]

    assert listed("CheckpointNoticesUndelivered") and not listed("CheckpointsMissed")


def test_the_notice_not_recorded_tells_no_pod_and_the_next_run_records_it(aws) -> None:
    cluster = FakeCluster(ack_after=None)
    night_of_training(aws, cluster)
    cluster.tick(CHECKPOINT)
    cluster.fail_once = {("PATCH", QUEUE)}
    with pytest.raises(Unfinished, match="annotate neuronfleet-training/train-0: not told: the pool's notice could"):
        h.run(tools(aws, cluster), now=CHECKPOINT)
    assert not [c for c in cluster.calls if c[0] == "PATCH" and "/pods/" in c[1]]
    h.run(tools(aws, cluster), now=CHECKPOINT + timedelta(minutes=1))
    assert cluster.queue_notes["neuronfleet/checkpoint-by"] == "2026-11-24T12:00:00Z"  # within one run: the morning


def test_the_day_bounds_wait_for_the_drain(aws) -> None:
    """The LocalQueue's HoldAndDrain patch failing at the deadline: the autoscaler keeps its night bounds (inference
    never outgrows a pool training still holds); the next run drains, then raises them."""
    cluster = FakeCluster(ack_after=timedelta(minutes=5))
    night_of_training(aws, cluster)
    cluster.tick(CHECKPOINT)
    h.run(tools(aws, cluster), now=CHECKPOINT)
    cluster.tick(MORNING)
    cluster.fail_once = {("PATCH", QUEUE)}
    with pytest.raises(Unfinished, match="set serve's autoscaler to 16-16 replicas: not yet: training is not drained"):
        h.run(tools(aws, cluster), now=MORNING)
    assert cluster.bounds == (4, 4) and cluster.stop == "Hold"
    assert h.run(tools(aws, cluster), now=MORNING + timedelta(minutes=1))["done"] == [
        "set rainier-training stopPolicy HoldAndDrain", "set serve's autoscaler to 16-16 replicas"]
    assert cluster.bounds == (16, 16) and cluster.stop == "HoldAndDrain"


def faulty_tools(aws: dict[str, Any], cluster: FakeCluster, *, ddb: dict[Any, Any] | None = None,
                 sns: dict[Any, Any] | None = None, cw: dict[Any, Any] | None = None, clock: Clock) -> h.Tools:
    t = tools(aws, cluster)
    t.ledger = Ledger(Faulty(aws["ddb"], ddb or {}), aws["table"], clock=clock, sleep=lambda _: None)
    t.topic = Topic(Faulty(aws["sns"], sns or {}), aws["topic"])
    t.metrics = Metrics(Faulty(aws["cw"], cw or {}), POOL_NAMESPACE)
    return t


T0 = 1_795_000_000.0


@pytest.mark.parametrize(("service", "op", "after"), [
    ("ddb", "query", False),
    ("ddb", "transact_write_items", False),
    ("ddb", "transact_write_items", True),
    ("ddb", "update_item", False),
    ("sns", "publish", False),
    ("sns", "publish", True),
    ("cw", "put_metric_data", False),
])
def test_an_aws_call_failing_at_the_reclaim_then_the_retry_announces_once(aws, service, op, after) -> None:
    """The reclaim run's AWS calls (the outbox's DynamoDB, SNS, CloudWatch), each failing once, before it took
    effect or after (its answer lost); the next minute's run retries: the missed checkpoint is announced once
    (SNS's lost answer: the one documented repeat, saying so), the reclaim is not held back, the metric is put."""
    cluster = FakeCluster(ack_after=None)
    night_of_training(aws, cluster)
    drive(aws, cluster, datetime(2026, 11, 24, 8, 2, tzinfo=UTC), MORNING)
    clock = Clock(T0)
    if op == "query":  # the outbox reads through a paginator (not a client call Faulty sees): fail the read itself
        t = faulty_tools(aws, cluster, clock=clock)
        read = t.ledger.messages
        calls = iter([ClientErrorOnce(client_error("ThrottlingException", "Query"))])
        t.ledger.messages = lambda **kw: next(calls, read)(**kw)  # type: ignore[method-assign]
    elif service == "sns":
        error: BaseException = client_error("InternalError" if after else "Throttled", "Publish",
                                            status=500 if after else 400)
    elif after:
        error = timeout()
    else:
        error = client_error("ThrottlingException", op)
    if op != "query":
        t = faulty_tools(aws, cluster, clock=clock, **{service: {(op, 1): Fault(error, after=after)}})
    cluster.tick(MORNING)
    with contextlib.suppress(Unfinished):  # a refused sent mark is retried by the run itself: no failure then
        h.run(t, now=MORNING, deadline=T0 + 30)
    cluster.tick(MORNING)
    assert cluster.replicas == 16 and cluster.preempted_at == MORNING  # the reclaim did not wait on AWS
    clock.now = T0 + 60
    retry = tools(aws, cluster)
    retry.ledger = Ledger(aws["ddb"], aws["table"], clock=clock, sleep=lambda _: None)
    h.run(retry, now=MORNING + timedelta(minutes=1), deadline=T0 + 90)
    got = inbox(aws)
    assert {m["Subject"] for m in got} == {"[neuronfleet] rainier: training did not checkpoint before the morning"}
    assert len(got) == 1 + (service == "sns" and after)
    assert sum(m["Message"].endswith(REPEAT_NOTE) for m in got) == (service == "sns" and after)
    assert aws["cw"].list_metrics(Namespace=POOL_NAMESPACE, MetricName="CheckpointsMissed")["Metrics"]


class ClientErrorOnce:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def __call__(self, **_: Any) -> Any:
        raise self.error


def test_two_overlapping_runs_at_the_window_and_at_the_morning_tell_each_pod_once_and_announce_once(aws) -> None:
    """Run B runs whole inside run A twice: between A's read and A's notice at the window's first minute, and
    between A's read and A's reclaim at the morning."""
    cluster = FakeCluster(ack_after=None)
    night_of_training(aws, cluster)
    drive(aws, cluster, datetime(2026, 11, 24, 8, 2, tzinfo=UTC), CHECKPOINT)
    b_results: list[Any] = []

    def run_b(now: datetime) -> Any:
        def go() -> None:
            b_results.append(h.run(tools(aws, cluster), now=now + timedelta(seconds=20)))
        return go

    cluster.before = {("PATCH", QUEUE): run_b(CHECKPOINT)}
    cluster.tick(CHECKPOINT)
    h.run(tools(aws, cluster), now=CHECKPOINT)
    drive(aws, cluster, CHECKPOINT + timedelta(minutes=1), MORNING)
    cluster.before = {("PATCH", HPA): run_b(MORNING)}
    drive(aws, cluster, MORNING, MORNING + timedelta(minutes=3))
    assert len(b_results) == 2
    pod_patches = [c for c in cluster.calls if c[0] == "PATCH" and "/pods/" in c[1]]
    assert len(pod_patches) <= 4 and cluster.queue_notes["neuronfleet/checkpoint-by"] == "2026-11-24T12:00:00Z"
    no_reclaim_without_notice(cluster)
    assert len(inbox(aws)) == 1

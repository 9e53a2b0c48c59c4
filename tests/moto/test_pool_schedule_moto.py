"""The shared pool's schedule function (lambdas/pool_schedule) over a day: moto for the announcement ledger, SNS and
CloudWatch, an in-process Kubernetes API for the cluster (the Deployment's scale, the training ClusterQueue, the
pool's pods, Kueue admitting and preempting), a fake clock. Night borrow, checkpoint signal, morning reclaim; the
missed checkpoint announced once; a failed call named and converged by the next run; the EKS token's shape; and
every call the function made over the day allowed by the kit's RBAC for its group, every rule of it used (the grant is
taken from the code: neuronfleet.sharing.manifests.schedule_access), nothing in kube-system or on serving's pods."""

from __future__ import annotations

import base64
import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from neuronfleet_runtime.announcements import Ledger, Unfinished
from neuronfleet_runtime.topic import Topic

from neuronfleet.eks import rbac
from neuronfleet.eks.manifests import SERVING_NAMESPACE as SERVING
from neuronfleet.eks.manifests import TRAINING_NAMESPACE as TRAINING
from neuronfleet.lambdas.pool_schedule import handler as h
from neuronfleet.lambdas.pool_schedule.adapters import KubeApi, KubeError, Metrics, Pool, eks_token
from neuronfleet.sharing import manifests as sharing
from neuronfleet_contract.pool_sharing import (
    ANNOTATION_CHECKPOINT_BY,
    ANNOTATION_CHECKPOINTED_AT,
    LABEL_POOL,
    LABEL_ROLE,
    POOL_NAMESPACE,
    PoolSchedule,
    PoolScheduleSettings,
    iso,
    parse_iso,
)
from tests.moto_support import alerts_inbox, announcements_table

REGION = "us-east-2"
SCHEDULE = PoolSchedule.build(pool="rainier", time_zone="America/New_York", day=["07:00-23:00"], pool_devices=64,
                              replica_devices=4, day_replicas=16, night_floor=4, checkpoint_deadline=30)


class FakeCluster:
    """The Kubernetes API as far as the function uses it, with Kueue's effect: training pods admitted while the
    training queue admits and inference lends two nodes; preempted (deleted) once inference's replicas need them.
    ``ack_after``: the job annotates its pod that long after its signal (None: never)."""

    def __init__(self, *, ack_after: timedelta | None) -> None:
        self.replicas, self.stop = 16, "Hold"
        self.training: dict[str, dict[str, Any]] = {}
        self.ack_after = ack_after
        self.now = datetime(2026, 11, 24, tzinfo=UTC)
        self.fail: set[tuple[str, str]] = set()
        self.calls: list[tuple[str, str]] = []
        self.preempted_at: datetime | None = None

    def tick(self, now: datetime) -> None:
        self.now = now
        for pod in self.training.values():
            notes = pod["metadata"]["annotations"]
            signalled = parse_iso(notes.get(ANNOTATION_CHECKPOINT_BY))
            if signalled and self.ack_after is not None and ANNOTATION_CHECKPOINTED_AT not in notes:
                sent = pod["signalled_at"]
                if now >= sent + self.ack_after:
                    notes[ANNOTATION_CHECKPOINTED_AT] = iso(sent + self.ack_after)
        free = 64 - self.replicas * 4
        if self.stop == "None" and not self.training and free >= 32:
            self.training = {n: self._pod(n, "training", 16) for n in ("train-0", "train-1")}
        if self.training and free < 32:
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
        if (method, path) in self.fail:
            return 500, b'{"kind":"Status","message":"etcdserver: request timed out"}'
        body = json.loads(request.data) if request.data else None  # type: ignore[arg-type]
        if path == f"/apis/apps/v1/namespaces/{SERVING}/deployments/serve/scale":
            if method == "PATCH":
                self.replicas = body["spec"]["replicas"]
            return 200, json.dumps({"spec": {"replicas": self.replicas}}).encode()
        if path == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/rainier-training":
            if method == "PATCH":
                self.stop = body["spec"]["stopPolicy"]
            return 200, json.dumps({"spec": {"stopPolicy": self.stop}}).encode()
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
            pod["signalled_at"] = self.now
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
    settings = PoolScheduleSettings(schedule=SCHEDULE, cluster_name="nf-eks", endpoint="https://k8s.example",
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
    assert cluster.replicas == 16 and cluster.stop == "Hold"
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
    cluster.fail = {("PATCH", f"/apis/apps/v1/namespaces/{SERVING}/deployments/serve/scale")}
    t = tools(aws, cluster)
    with pytest.raises(Unfinished) as caught:
        h.run(t, now=night)
    assert "scale serve to 4" in str(caught.value) and "HTTP 500" in str(caught.value)
    assert cluster.stop == "None" and cluster.replicas == 16  # the other step went through
    cluster.fail = set()
    assert h.run(t, now=night + timedelta(minutes=1))["done"] == ["scale serve to 4"]
    assert h.run(t, now=night + timedelta(minutes=2))["done"] == []


def test_an_unreadable_pool_changes_nothing(aws) -> None:
    cluster = FakeCluster(ack_after=None)
    cluster.fail = {("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/rainier-training")}
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
    settings = PoolScheduleSettings(schedule=SCHEDULE, cluster_name="nf-eks", endpoint="https://k8s.example",
                                    certificate_authority="Y2E=", namespace=SERVING, deployment="serve",
                                    training_queue="rainier-training", topic_arn="arn:aws:sns:us-east-2:1:a",
                                    ledger_table="announced", fleet="nf-prod", training_namespace=TRAINING)
    assert PoolScheduleSettings.from_environment(settings.to_environment()) == settings
    env = settings.to_environment() | {"POOL_SCHEDULE": json.dumps(SCHEDULE.to_mapping() | {"night_floor": 99})}
    with pytest.raises(ValueError, match=r"POOL_SCHEDULE.*night_floor: got 99; allowed: at most day_replicas"):
        PoolScheduleSettings.from_environment(env)


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

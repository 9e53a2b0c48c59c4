"""The schedule function's thin adapters: the cluster's Kubernetes API (HTTPS with an EKS token, standard library
only) and CloudWatch. No decision is taken here (logic.py takes them).

The token is what ``aws eks get-token`` makes (aws/aws-cli awscli/customizations/eks/get_token.py @ 07c4fe36,
read 2026-11-23): an STS GetCallerIdentity URL presigned for 60 seconds with the header ``x-k8s-aws-id: <cluster>``
signed in, base64url without padding, prefixed ``k8s-aws-v1.``. Amazon EKS maps the function's role to the Kubernetes
group its access entry names.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from neuronfleet_contract.pool_schedule import (
    ANNOTATION_CHECKPOINT_BY,
    ANNOTATION_CHECKPOINTED_AT,
    ANNOTATION_NOTICE_FOR,
    ANNOTATION_RECLAIMED,
    ANNOTATION_REPORTED_FOR,
    LABEL_POOL,
    LABEL_ROLE,
    Role,
    iso,
    parse_iso,
)

from .logic import Notice, Reclaim, TrainingPod

TOKEN_PREFIX = "k8s-aws-v1."
K8S_AWS_ID_HEADER = "x-k8s-aws-id"
URL_SECONDS = 60
NEURON_RESOURCE = "aws.amazon.com/neuron"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
MERGE_PATCH = "application/merge-patch+json"


class KubeError(RuntimeError):
    """A Kubernetes API call that failed: the method, the path, the status and what the server said."""


def eks_token(sts_client: Any, cluster_name: str) -> str:
    """An EKS bearer token for ``cluster_name`` from a botocore STS client."""

    def add_header(request: Any, **_: Any) -> None:
        request.headers[K8S_AWS_ID_HEADER] = cluster_name

    events = sts_client.meta.events
    events.register_first("before-sign.sts.GetCallerIdentity", add_header, unique_id="neuronfleet-k8s-aws-id")
    try:
        url = sts_client.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=URL_SECONDS,
                                                HttpMethod="GET")
    finally:
        events.unregister("before-sign.sts.GetCallerIdentity", unique_id="neuronfleet-k8s-aws-id")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


Send = Callable[[urllib.request.Request], tuple[int, bytes]]


def https_sender(certificate_authority: str, *, timeout: float = 10.0) -> Send:
    """Sends a request over TLS verified against the cluster's CA (base64 PEM as EKS gives it)."""
    pem = base64.b64decode(certificate_authority).decode()
    with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as f:
        f.write(pem)
    context = ssl.create_default_context(cafile=f.name)

    def send(request: urllib.request.Request) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    return send


@dataclass
class KubeApi:
    endpoint: str
    token: Callable[[], str]
    send: Send

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token()}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = MERGE_PATCH
        request = urllib.request.Request(self.endpoint.rstrip("/") + path, data=data, method=method, headers=headers)
        try:
            status, raw = self.send(request)
        except OSError as error:
            raise KubeError(f"{method} {path}: {error}") from error
        if status >= 300:
            raise KubeError(f"{method} {path}: HTTP {status}: {raw[:300].decode(errors='replace')}")
        try:
            out = json.loads(raw or b"{}")
        except ValueError as error:
            raise KubeError(f"{method} {path}: HTTP {status}: not JSON ({error})") from error
        if not isinstance(out, dict):
            raise KubeError(f"{method} {path}: HTTP {status}: a JSON {type(out).__name__}, not an object")
        return out


class Pool:
    """The pool's objects in the cluster, read and moved through :class:`KubeApi`."""

    def __init__(self, api: KubeApi, *, pool: str, namespace: str, deployment: str, training_queue: str,
                 training_namespace: str | None = None) -> None:
        """``namespace``: the inference Deployment's, its autoscaler's (named as the Deployment) and its pods';
        ``training_namespace``: the training LocalQueue's (``training_queue``) and pods' (the same when not
        given). The calls below are all the function makes: its RBAC grants exactly these
        (neuronfleet.sharing.manifests.schedule_access)."""
        self.api, self.pool, self.namespace = api, pool, namespace
        self.training_namespace = training_namespace or namespace
        self.deployment, self.training_queue = deployment, training_queue

    def _autoscaler_path(self) -> str:
        return f"/apis/autoscaling/v2/namespaces/{self.namespace}/horizontalpodautoscalers/{self.deployment}"

    def bounds(self) -> tuple[int, int]:
        """The inference HorizontalPodAutoscaler's (minReplicas, maxReplicas); minReplicas defaults to 1 (Kubernetes
        1.36 OpenAPI HorizontalPodAutoscalerSpec.minReplicas)."""
        spec = self.api.call("GET", self._autoscaler_path()).get("spec") or {}
        return int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 0)

    def set_bounds(self, bounds: tuple[int, int]) -> None:
        """Set the autoscaler's bounds (one merge patch); the autoscaler, not the function, sets the replicas."""
        self.api.call("PATCH", self._autoscaler_path(), {"spec": {"minReplicas": bounds[0], "maxReplicas": bounds[1]}})

    def _queue_path(self) -> str:
        return f"{KUEUE}/namespaces/{self.training_namespace}/localqueues/{self.training_queue}"

    def queue(self) -> QueueState:
        """The training LocalQueue: its stopPolicy and what the function records on it (the pool's notice, the last
        drain's report, the morning last reported; each None when absent or unreadable)."""
        queue = self.api.call("GET", self._queue_path())
        notes = (queue.get("metadata") or {}).get("annotations") or {}
        morning, by = parse_iso(notes.get(ANNOTATION_NOTICE_FOR)), parse_iso(notes.get(ANNOTATION_CHECKPOINT_BY))
        return QueueState(stop=str((queue.get("spec") or {}).get("stopPolicy") or "None"),
                          notice=Notice(morning, by) if morning is not None and by is not None else None,
                          reclaim=Reclaim.from_json(notes.get(ANNOTATION_RECLAIMED)),
                          reported_for=parse_iso(notes.get(ANNOTATION_REPORTED_FOR)))

    def update_queue(self, *, stop: str | None = None, notice: Notice | None = None, reclaim: Reclaim | None = None,
                     reported_for: datetime | None = None) -> None:
        """One merge patch of the training LocalQueue: its stopPolicy and what the function records on it."""
        body: dict[str, Any] = {}
        notes: dict[str, str] = {}
        if stop is not None:
            body["spec"] = {"stopPolicy": stop}
        if notice is not None:
            notes |= {ANNOTATION_NOTICE_FOR: iso(notice.morning), ANNOTATION_CHECKPOINT_BY: iso(notice.checkpoint_by)}
        if reclaim is not None:
            notes[ANNOTATION_RECLAIMED] = reclaim.to_json()
        if reported_for is not None:
            notes[ANNOTATION_REPORTED_FOR] = iso(reported_for)
        if notes:
            body["metadata"] = {"annotations": notes}
        self.api.call("PATCH", self._queue_path(), body)

    def pods(self, role: Role) -> list[dict[str, Any]]:
        selector = urllib.parse.quote(f"{LABEL_POOL}={self.pool},{LABEL_ROLE}={role}")
        namespace = self.training_namespace if role is Role.TRAINING else self.namespace
        return list(self.api.call("GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")
                    .get("items", []))

    def annotate(self, pod: TrainingPod, checkpoint_by: datetime, text: str) -> None:
        self.api.call("PATCH", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}",
                      {"metadata": {"annotations": {ANNOTATION_CHECKPOINT_BY: text}}})


@dataclass(frozen=True)
class QueueState:
    stop: str
    notice: Notice | None
    reclaim: Reclaim | None
    reported_for: datetime | None


def devices(pod: Mapping[str, Any]) -> int:
    """The Neuron devices a pod's containers request."""
    total = 0
    for container in pod.get("spec", {}).get("containers", []):
        resources = container.get("resources", {})
        amount = resources.get("requests", {}).get(NEURON_RESOURCE) or resources.get("limits", {}).get(NEURON_RESOURCE)
        try:
            total += int(amount or 0)
        except (TypeError, ValueError):
            continue
    return total


def running(pod: Mapping[str, Any]) -> bool:
    """On a node and not finished (Pending on a node holds its devices as a Running pod does)."""
    status = pod.get("status", {}).get("phase")
    return status == "Running" or (status == "Pending" and bool(pod.get("spec", {}).get("nodeName")))


def training_pod(pod: Mapping[str, Any]) -> TrainingPod:
    meta = pod.get("metadata", {})
    notes = meta.get("annotations") or {}
    return TrainingPod(name=str(meta.get("name")), namespace=str(meta.get("namespace")), devices=devices(pod),
                       running=running(pod) and not meta.get("deletionTimestamp"),
                       checkpoint_by=parse_iso(notes.get(ANNOTATION_CHECKPOINT_BY)),
                       checkpointed_at=parse_iso(notes.get(ANNOTATION_CHECKPOINTED_AT)))


class Metrics:
    def __init__(self, client: Any, namespace: str) -> None:
        self.client, self.namespace = client, namespace

    def put(self, data: list[dict[str, Any]]) -> None:
        if data:
            self.client.put_metric_data(Namespace=self.namespace, MetricData=data)

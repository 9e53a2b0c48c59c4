"""Lambda entry point of a shared pool's schedule: one run every minute (EventBridge Scheduler ``rate(1 minute)``).

Reads the pool (the inference Deployment's replicas, the training ClusterQueue's stopPolicy, the pool's pods),
asks logic.decide what its instant's target needs, applies it (scale, hold or admit, annotate each training pod
once), announces a missed checkpoint once per pool and morning (the announcements outbox), and publishes the pool's
devices by role. Each step that fails is named and the others still run; the run then raises
:class:`announcements.Unfinished`, and the next minute's run converges again (nothing it did is undone or repeated:
every step compares with what the cluster shows).

Configuration: :class:`neuronfleet_contract.pool_sharing.PoolScheduleSettings`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from neuronfleet_runtime.announcements import Ledger, Unfinished
from neuronfleet_runtime.topic import Topic

from neuronfleet_contract.pool_sharing import (
    MISSED_METRIC,
    UTILISATION_METRIC,
    PoolScheduleSettings,
    Role,
    iso,
)

from .adapters import KubeApi, KubeError, Metrics, Pool, eks_token, https_sender, training_pod
from .logic import Observed, Plan, decide

SERVICE = "neuronfleet-pool-schedule"
logger = Logger(service=SERVICE)


@dataclass
class Tools:
    settings: PoolScheduleSettings
    pool: Pool
    ledger: Ledger
    topic: Topic
    metrics: Metrics


def observe(pool: Pool) -> Observed:
    inference = [training_pod(p) for p in pool.pods(Role.INFERENCE)]
    return Observed(inference_replicas=pool.replicas(),
                    inference_devices=sum(p.devices for p in inference if p.running),
                    training_held=pool.held(),
                    training_pods=tuple(training_pod(p) for p in pool.pods(Role.TRAINING)))


def run(t: Tools, *, now: datetime, deadline: float | None = None) -> dict[str, Any]:
    schedule = t.settings.schedule
    box = t.ledger.outbox(t.topic, deadline=deadline)
    box.complete()
    problems: list[str] = []
    try:
        observed = observe(t.pool)
    except KubeError as error:
        box.finish()
        raise Unfinished([f"read the pool: {error}"]) from error
    plan = decide(schedule, now, observed)
    steps: list[tuple[str, Any]] = []
    if plan.scale_inference_to is not None:
        steps.append((f"scale {t.settings.deployment} to {plan.scale_inference_to}",
                      lambda: t.pool.scale(plan.scale_inference_to or 0)))
    if plan.hold_training is not None:
        steps.append((f"set {t.settings.training_queue} stopPolicy {'Hold' if plan.hold_training else 'None'}",
                      lambda: t.pool.hold(bool(plan.hold_training))))
    for signal in plan.signals:
        steps.append((f"annotate {signal.pod.namespace}/{signal.pod.name}",
                      lambda s=signal: t.pool.annotate(s.pod, s.checkpoint_by, iso(s.checkpoint_by))))
    done = []
    for what, step in steps:
        try:
            step()
            done.append(what)
        except KubeError as error:
            problems.append(f"{what}: {error}")
    if plan.announcement is not None:
        a = plan.announcement
        box.once(a.key, expires=a.expires, say=(a.subject, a.message))
    try:
        t.metrics.put(metric_data(t.settings, plan, now))
    except Exception as error:
        problems.append(f"put the pool's metrics: {error}")
    logger.info("pool schedule run", extra={"phase": plan.target.phase, "done": done, "missed": len(plan.missed),
                                            "announced": box.sent, "problems": problems})
    box.finish()
    if problems:
        raise Unfinished(problems)
    return {"phase": str(plan.target.phase), "done": done, "announced": box.sent}


def metric_data(settings: PoolScheduleSettings, plan: Plan, now: datetime) -> list[dict[str, Any]]:
    pool = settings.schedule.pool
    data = [{"MetricName": UTILISATION_METRIC, "Timestamp": now, "Unit": "Count", "Value": float(value),
             "Dimensions": [{"Name": "Pool", "Value": pool}, {"Name": "Role", "Value": str(role)}]}
            for role, value in plan.usage.items()]
    if plan.missed:
        data.append({"MetricName": MISSED_METRIC, "Timestamp": now, "Unit": "Count", "Value": float(len(plan.missed)),
                     "Dimensions": [{"Name": "Pool", "Value": pool}]})
    return data


@cache
def tools() -> Tools:
    settings = PoolScheduleSettings.from_environment()
    sts = boto3.client("sts")
    api = KubeApi(endpoint=settings.endpoint, token=lambda: eks_token(sts, settings.cluster_name),
                  send=https_sender(settings.certificate_authority))
    pool = Pool(api, pool=settings.schedule.pool, namespace=settings.namespace, deployment=settings.deployment,
                training_queue=settings.training_queue, training_namespace=settings.training_namespace)
    return Tools(settings=settings, pool=pool, ledger=Ledger(boto3.client("dynamodb"), settings.ledger_table),
                 topic=Topic(boto3.client("sns"), settings.topic_arn),
                 metrics=Metrics(boto3.client("cloudwatch"), settings.metrics_namespace))


def handler(event: Any, context: Any) -> dict[str, Any]:
    return run(tools(), now=datetime.now(UTC),
               deadline=time.time() + context.get_remaining_time_in_millis() / 1000)

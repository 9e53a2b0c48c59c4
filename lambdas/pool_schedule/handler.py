"""Lambda entry point of a shared pool's schedule: one run every minute (EventBridge Scheduler ``rate(1 minute)``).

Reads the pool (the inference autoscaler's bounds, the training LocalQueue's stopPolicy and the pool's notice
recorded on it, the pool's pods), asks logic.decide what its instant's target needs, applies it in the morning's
order (the LocalQueue: admit, hold or drain, and the pool's notice; then each training pod told once; then the
autoscaler's bounds, raised to the day's only once the drain is made), announces the pods a reclaim took without a checkpoint
once per pool and morning (the announcements outbox), and publishes the pool's devices by role. Each step that
fails is named; the others still run, except the pods' notices, which wait for the pool's notice to be recorded
(so the reclaim never waits on a notice nobody recorded). The run then raises :class:`announcements.Unfinished`,
and the next minute's run converges again (nothing it did is undone or repeated: every step compares with what the
cluster shows).

Configuration: :class:`neuronfleet_contract.pool_schedule.PoolScheduleConfig`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from neuronfleet_runtime.announcements import Ledger, Outcome, Unfinished
from neuronfleet_runtime.topic import Topic

from neuronfleet_contract.pool_schedule import (
    MISSED_METRIC,
    UNNOTIFIED_METRIC,
    UNPUBLISHABLE_METRIC,
    UTILISATION_METRIC,
    PoolScheduleConfig,
    Role,
    iso,
)

from .adapters import KubeApi, KubeError, Metrics, Pool, eks_token, https_sender, training_pod
from .logic import DRAIN, Observed, Plan, decide

SERVICE = "neuronfleet-pool-schedule"
logger = Logger(service=SERVICE)


@dataclass
class Tools:
    settings: PoolScheduleConfig
    pool: Pool
    ledger: Ledger
    topic: Topic
    metrics: Metrics


def observe(pool: Pool) -> Observed:
    inference = [training_pod(p) for p in pool.pods(Role.INFERENCE)]
    queue = pool.queue()
    return Observed(inference_bounds=pool.bounds(),
                    inference_devices=sum(p.devices for p in inference if p.running),
                    training_stop=queue.stop, notice=queue.notice, reclaim=queue.reclaim,
                    reported_for=queue.reported_for,
                    training_pods=tuple(training_pod(p) for p in pool.pods(Role.TRAINING)))


def run(t: Tools, *, now: datetime, deadline: float | None = None) -> dict[str, Any]:
    schedule = t.settings.schedule
    box = t.ledger.outbox(t.topic, deadline=deadline)
    box.complete()
    problems: list[str] = []
    try:
        observed = observe(t.pool)
    except KubeError as error:
        problems.append(f"read the pool: {error}")
        try:
            box.finish()
        except Unfinished as unfinished:
            problems += unfinished.problems
        raise Unfinished(problems) from error
    plan = decide(schedule, now, observed)
    done: list[str] = []

    def step(what: str, action: Any) -> bool:
        try:
            action()
        except KubeError as error:
            problems.append(f"{what}: {error}")
            return False
        done.append(what)
        return True

    recorded = True
    if plan.training_stop is not None or plan.record_notice is not None or plan.record_reclaim is not None:
        what = ", ".join(
            ([f"set {t.settings.training_queue} stopPolicy {plan.training_stop}"]
             if plan.training_stop is not None else [])
            + ([f"record the notice (checkpoint by {iso(plan.record_notice.checkpoint_by)})"]
               if plan.record_notice is not None else [])
            + (["record the drain's report"] if plan.record_reclaim is not None else []))
        recorded = step(what, lambda: t.pool.update_queue(stop=plan.training_stop, notice=plan.record_notice,
                                                          reclaim=plan.record_reclaim))
    for signal in plan.signals:
        what = f"annotate {signal.pod.namespace}/{signal.pod.name}"
        if not recorded and plan.record_notice is not None:
            problems.append(f"{what}: not told: the pool's notice could not be recorded")
            continue
        step(what, lambda s=signal: t.pool.annotate(s.pod, s.checkpoint_by, iso(s.checkpoint_by)))
    if plan.bounds is not None:
        bounds = plan.bounds
        what = f"set {t.settings.deployment}'s autoscaler to {bounds[0]}-{bounds[1]} replicas"
        if not recorded and (plan.training_stop == DRAIN or plan.record_reclaim is not None):
            problems.append(f"{what}: not yet: training is not drained (or its report not recorded)")
        else:
            step(what, lambda: t.pool.set_bounds(bounds))
    announced = counted = True
    if plan.announcement is not None:
        a = plan.announcement
        announced = box.once(a.key, expires=a.expires, say=(a.subject, a.message)) is not Outcome.UNRECORDED
    try:
        t.metrics.put(metric_data(t.settings, plan, now, set_aside=len(box.set_aside)))
    except Exception as error:
        counted = False
        problems.append(f"put the pool's metrics: {error}")
    if plan.report is not None and announced and counted:
        morning = plan.report.morning
        step(f"mark the report of {iso(morning)} reported", lambda: t.pool.update_queue(reported_for=morning))
    waiting = iso(plan.waiting_until) if plan.waiting_until is not None else None
    logger.info("pool schedule run", extra={"phase": plan.target.phase, "done": done, "waiting_until": waiting,
                                            "unacknowledged": len(plan.unacknowledged),
                                            "not_notified": len(plan.not_notified), "announced": box.sent,
                                            "set_aside": box.set_aside, "problems": problems})
    try:
        box.finish()
    except Unfinished as error:
        problems += error.problems
    if problems:
        raise Unfinished(problems)
    return {"phase": str(plan.target.phase), "done": done, "waiting_until": waiting, "announced": box.sent}


def metric_data(settings: PoolScheduleConfig, plan: Plan, now: datetime, *, set_aside: int = 0
                ) -> list[dict[str, Any]]:
    pool = settings.schedule.pool
    data = [{"MetricName": UTILISATION_METRIC, "Timestamp": now, "Unit": "Count", "Value": float(value),
             "Dimensions": [{"Name": "Pool", "Value": pool}, {"Name": "Role", "Value": str(role)}]}
            for role, value in plan.usage.items()]
    report = plan.report
    for name, count in ((MISSED_METRIC, len(report.unacknowledged) if report else 0),
                        (UNNOTIFIED_METRIC, len(report.not_notified) if report else 0),
                        (UNPUBLISHABLE_METRIC, set_aside)):
        if count:
            data.append({"MetricName": name, "Timestamp": now, "Unit": "Count", "Value": float(count),
                         "Dimensions": [{"Name": "Pool", "Value": pool}]})
    return data


@cache
def tools() -> Tools:
    settings = PoolScheduleConfig.from_environment()
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

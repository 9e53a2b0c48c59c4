"""The kit's health metrics as CloudWatch metrics of one fleet: what the constructs' ``metric_*`` methods return, so
that an alarm or a dashboard widget on them sees only its own fleet (neuronfleet_contract.health)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet_contract.health import HealthConfig, health_dimensions

from ..core.args import check_argument
from ..core.rules import name_rule


def fleet_health(fleet: str) -> HealthConfig:
    """A construct's ``fleet`` argument, checked (a fleet name, or "" for none: see neuronfleet_contract.health)."""
    check_argument("fleet", fleet, _fleet_rule)
    return HealthConfig(fleet=fleet)


def _fleet_rule(value: object) -> None:
    if not isinstance(value, str):
        raise ValueError("a fleet name (str), or '' for none")
    if value:
        name_rule(value)


def health_metric(namespace: str, metric_name: str, *, service: str, health: HealthConfig,
                  options: dict[str, Any]) -> cloudwatch.Metric:
    """One health metric of one function: dimensions exactly those it publishes (``service``, and ``Fleet`` when it
    has one); hourly sums unless ``options`` (``cloudwatch.MetricOptions`` keywords) say otherwise."""
    props: dict[str, Any] = {"statistic": "Sum", "period": Duration.hours(1), **options}
    return cloudwatch.Metric(namespace=namespace, metric_name=metric_name,
                             dimensions_map=health_dimensions(service, health.fleet), **props)


def health_alarm(scope: Construct, construct_id: str, metric: cloudwatch.Metric, *, topic: sns.ITopic,
                 description: str, periods: int = 1, announce_ok: bool = False) -> cloudwatch.Alarm:
    """An alarm into ``topic`` when each of ``periods`` consecutive periods of ``metric`` (a health count) has one or
    more; no data is no alarm. ``announce_ok``: its return to OK is announced too."""
    alarm = metric.create_alarm(
        scope, construct_id, threshold=1, evaluation_periods=periods, datapoints_to_alarm=periods,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING, alarm_description=description)
    action = cw_actions.SnsAction(topic)
    alarm.add_alarm_action(action)
    if announce_ok:
        alarm.add_ok_action(action)
    return alarm

"""SageMaker's deployment guardrails as neuronfleet records them (facts/data/deployment_guardrails.json), held to
AWS's own data: botocore 1.44.5's SageMaker model and cfn-lint 1.58.0's CloudFormation schema."""

from __future__ import annotations

import re
from typing import Any

import botocore.session
import pytest
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from neuronfleet.facts.guardrails import guardrails

G = guardrails()


@pytest.fixture(scope="module")
def shapes() -> Any:
    return botocore.session.get_session().get_service_model("sagemaker").shape_for


@pytest.fixture(scope="module")
def cfn() -> dict[str, Any]:
    return dict(PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-2", "AWS::SageMaker::Endpoint").schema)


def _range(shape: Any) -> tuple[int, int]:
    return shape.metadata["min"], shape.metadata["max"]


def test_enums_and_bounds_match_botocore(shapes: Any) -> None:
    assert G.traffic_routing_types == tuple(shapes("TrafficRoutingConfigType").enum)
    assert set(G.capacity_size_types) == set(shapes("CapacitySizeType").enum)
    assert G.wait_interval_s == _range(shapes("WaitIntervalInSeconds"))
    assert G.termination_wait_s == _range(shapes("TerminationWaitInSeconds"))
    assert G.max_execution_timeout_s == _range(shapes("MaximumExecutionTimeoutInSeconds"))
    assert G.max_rollback_alarms == shapes("AlarmList").metadata["max"]
    assert shapes("CapacitySizeValue").metadata["min"] == 1


def test_percent_limits_are_botocores_own_words(shapes: Any) -> None:
    routing = shapes("TrafficRoutingConfig").members
    canary = re.search(r"less than or equal to (\d+)%", routing["CanarySize"].documentation)
    linear = re.search(r"must be (\d+)-(\d+)%", routing["LinearStepSize"].documentation)
    rolling = re.search(r"between (\d+)% to (\d+)%", shapes("RollingUpdatePolicy").members["MaximumBatchSize"]
                        .documentation)
    assert canary and int(canary[1]) == G.canary_max_percent
    assert linear and (int(linear[1]), int(linear[2])) == G.linear_step_percent
    assert rolling and (int(rolling[1]), int(rolling[2])) == G.rolling_batch_percent


def test_botocore_requires_a_wait_where_cloudformation_does_not(shapes: Any, cfn: dict[str, Any]) -> None:
    """The recorded schema difference: NeuronEndpoint sets WaitIntervalInSeconds always."""
    assert set(shapes("TrafficRoutingConfig").required_members) == {"Type", "WaitIntervalInSeconds"}
    assert cfn["definitions"]["TrafficRoutingConfig"]["required"] == ["Type"]
    assert "WaitIntervalInSeconds" in G.raw["schema_difference"]


def test_the_cloudformation_schema_takes_the_same_bounds(cfn: dict[str, Any]) -> None:
    d = cfn["definitions"]
    assert set(d["DeploymentConfig"]["properties"]) == {"AutoRollbackConfiguration", "BlueGreenUpdatePolicy",
                                                        "RollingUpdatePolicy"}
    assert d["TrafficRoutingConfig"]["properties"]["Type"]["enum"] == list(G.traffic_routing_types)
    wait = d["TrafficRoutingConfig"]["properties"]["WaitIntervalInSeconds"]
    assert (wait["minimum"], wait["maximum"]) == G.wait_interval_s
    bg = d["BlueGreenUpdatePolicy"]["properties"]
    assert (bg["TerminationWaitInSeconds"]["minimum"], bg["TerminationWaitInSeconds"]["maximum"]) == G.termination_wait_s
    timeout = bg["MaximumExecutionTimeoutInSeconds"]
    assert (timeout["minimum"], timeout["maximum"]) == G.max_execution_timeout_s
    assert d["AutoRollbackConfig"]["properties"]["Alarms"]["maxItems"] == G.max_rollback_alarms


def test_every_fact_names_its_source_and_date() -> None:
    assert G.read == "2026-11-23"
    for key in ("botocore", "cloudformation", "exclusions", "canary", "linear"):
        assert G.sources[key]
    assert "Multi-variant".lower() in " ".join(G.rolling_excluded).lower()
    assert G.sources["exclusions"].startswith("https://docs.aws.amazon.com/sagemaker/")

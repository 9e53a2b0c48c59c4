"""The lifecycle function's settings through its environment: one part of a split fleet travels whole, and a missing
or malformed variable is refused naming the variable, the value and what is allowed (before the function acts)."""

from __future__ import annotations

import json

import pytest

from neuronfleet_contract.capacity_lifecycle import (
    POLICY_PARAMETER,
    CapacityPolicy,
    ClusterRef,
    LifecycleConfig,
    PolicyUnreadable,
    policy_parameter_name,
)
from neuronfleet_contract.environment import InvalidEnvironment

POLICY = CapacityPolicy.from_document({"max_upfront_fee_usd": "60000", "max_usd_per_instance_hour": "45",
                               "allow_extension": True, "extension_budget_usd": "5000"})
PART = LifecycleConfig(
    fleet="nf-rainier", topic_arn="arn:aws:sns:us-east-2:111111111111:alerts", ledger_table="announced",
    policy=POLICY, clusters=tuple(ClusterRef(
        name=f"ultra-{i:02d}", queue_arn=f"arn:aws:batch:us-east-2:111111111111:job-queue/q{i}",
        instance_type="trn2u.48xlarge", drain_bucket=f"data-{i}",
        group_arns=(f"arn:aws:resource-groups:us-east-2:111111111111:group/ultra-{i:02d}",)) for i in (6, 7)),
    gpu_queue_arn="arn:aws:batch:us-east-2:111111111111:job-queue/gpu", gpu_instance_type="p5.48xlarge",
    prices={"trn2u.48xlarge": {"usd_per_hour": "44.7013", "as_of": "2025-10-01"}},
    policy_parameter=policy_parameter_name("nf-rainier"))
PARAMETERS = {policy_parameter_name("nf-rainier"): POLICY.to_json()}


def env_with(**changes: str | None) -> dict[str, str]:
    env = PART.to_environment()
    for k, v in changes.items():
        if v is None:
            env.pop(k)
        else:
            env[k] = v
    return env


def test_a_part_travels_through_the_environment_whole_and_its_policy_through_its_parameter():
    env = PART.to_environment()
    assert env[POLICY_PARAMETER] == "/neuronfleet/nf-rainier/capacity-policy"
    assert "CAPACITY_POLICY" not in env and not [v for v in env.values() if "max_upfront_fee_usd" in v]
    assert LifecycleConfig.from_environment(env, read_parameter=PARAMETERS.__getitem__) == PART


def test_a_rewritten_environment_cannot_carry_a_policy():
    """Finding 1: whoever may UpdateFunctionConfiguration must not be able to raise the limits. A CAPACITY_POLICY
    variable is not read; the parameter's name is (and the role may read that one parameter only)."""
    generous = CapacityPolicy.from_document({"max_upfront_fee_usd": "1e9", "max_usd_per_instance_hour": "1e9"})
    env = env_with(CAPACITY_POLICY=generous.to_json())
    assert LifecycleConfig.from_environment(env, read_parameter=PARAMETERS.__getitem__).policy == POLICY


@pytest.mark.parametrize("value", ["not json", "[]", '{"max_usd_per_instance_hour": "45"}'])
def test_an_unreadable_policy_parameter_stops_the_run_naming_it(value):
    with pytest.raises(PolicyUnreadable, match=r"^SSM parameter /neuronfleet/nf-rainier/capacity-policy: got "):
        LifecycleConfig.from_environment(PART.to_environment(), read_parameter=lambda name: value)


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("CLUSTERS", None, "got nothing (the variable is not set)"),
    ("CLUSTERS", "[]", "a non-empty JSON list"),
    ("CLUSTERS", "not json", "a non-empty JSON list"),
    ("CLUSTERS", '{"name": "ultra-06"}', "expected a non-empty list"),
    ("CLUSTERS", '["ultra-06"]', "[0] is not an object"),
    ("CLUSTERS", '[{"name": "ultra-06", "instance_type": "trn2u.48xlarge", "drain_bucket": "d"}]',
     "[0].queue_arn: got None, not a non-blank string"),
    ("CLUSTERS", '[{"name": " ", "queue_arn": "q", "instance_type": "t", "drain_bucket": "d"}]',
     "[0].name: got ' ', not a non-blank string"),
    ("CLUSTERS", json.dumps([{"name": "a", "queue_arn": "q", "instance_type": "t", "drain_bucket": "d"}] * 2),
     "cluster names ['a'] repeat: each cluster is looked after once"),
    ("CLUSTERS", '[{"name": "a", "queue_arn": "q", "instance_type": "t", "drain_bucket": "d", "group_arns": [""]}]',
     "expected a list of non-blank strings"),
    ("ANNOUNCEMENTS_TABLE", None, "the name of the announcements table"),
    ("ALERTS_TOPIC_ARN", "  ", "the ARN of the fleet's SNS topic"),
    (POLICY_PARAMETER, None, "the name of the SSM parameter holding the capacity policy"),
    ("PRICES", "[1, 2", "instance type -> {usd_per_hour, as_of}"),
])
def test_a_missing_or_malformed_variable_is_refused_naming_it(variable, value, says):
    with pytest.raises(InvalidEnvironment) as raised:
        LifecycleConfig.from_environment(env_with(**{variable: value}), read_parameter=PARAMETERS.__getitem__)
    assert raised.value.variable == variable
    assert str(raised.value).startswith(f"environment variable {variable}: got ") and says in str(raised.value)

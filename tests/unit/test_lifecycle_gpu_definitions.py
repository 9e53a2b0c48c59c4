"""The GPU-queue move submits only the fleet's GPU job definitions (issue 36, finding 3): a held job's tag chooses among
them, by name, name:revision or ARN, and is refused (announced, never submitted) when it names any other: the
lifecycle role may submit those revisions and no other (neuronfleet.fallback.gpu_pool.GpuPool.grant_submit_jobs),
so the function does what IAM allows instead of meeting AccessDenied."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import botocore.session
import pytest

from neuronfleet.lambdas.capacity_lifecycle.logic import (
    HeldJob,
    Move,
    Refuse,
    Tell,
    fleet_definition,
    held,
    refuse_text,
)
from neuronfleet_contract.capacity_lifecycle import CapacityPolicy, ClusterRef, LifecycleConfig

OURS = "arn:aws:batch:us-east-2:111111111111:job-definition/finetune-cuda:7"
OTHER = "arn:aws:batch:us-east-2:111111111111:job-definition/eval-cuda:2"
FLEET = (OURS, OTHER)
NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
POLICY = CapacityPolicy(max_upfront_fee_usd=Decimal(10000), max_usd_per_instance_hour=Decimal(25),
                        fallback_after=timedelta(minutes=60))


def test_submit_job_takes_a_name_a_revision_or_an_arn_and_without_a_revision_the_latest_active():
    """The forms a tag may take, as botocore 1.44.5's batch model documents SubmitJob's jobDefinition: why the
    function resolves every form to one of the fleet's revision ARNs before it submits."""
    doc = botocore.session.get_session().get_service_model("batch").operation_model("SubmitJob") \
        .input_shape.members["jobDefinition"].documentation
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", doc))
    assert "can be one of definition-name, definition-name:revision, or the Amazon Resource Name (ARN)" in text
    assert "with or without the revision" in text
    assert "If the revision is not specified, then the latest active revision is used." in text


@pytest.mark.parametrize(("tag", "expected"), [
    (OURS, OURS),                                                             # the ARN, exactly
    ("finetune-cuda", OURS),                                                  # a name: the fleet's revision of it
    ("finetune-cuda:7", OURS),                                                # name:revision, the fleet's
    (" finetune-cuda ", OURS),                                                # blanks around a tag value
    ("arn:aws:batch:us-east-2:111111111111:job-definition/finetune-cuda", OURS),  # an ARN without revision
    ("eval-cuda", OTHER),
    ("finetune-cuda:6", None),                                                # another revision of the name
    ("finetune-cuda:8", None),                                                # a newer one someone registered
    ("arn:aws:batch:us-east-2:111111111111:job-definition/finetune-cuda:6", None),
    ("arn:aws:batch:us-east-2:222222222222:job-definition/finetune-cuda:7", None),   # another account
    ("arn:aws:batch:us-west-2:111111111111:job-definition/finetune-cuda", None),      # another region
    ("arn:aws-cn:batch:us-east-2:111111111111:job-definition/finetune-cuda:7", None),  # another partition
    ("arn:aws:batch:us-east-2:111111111111:job-queue/finetune-cuda", None),   # not a job definition
    ("admin-role-job", None),                                                 # any other definition of the account
    ("finetune", None),                                                       # a prefix of a name is not the name
    ("finetune-cuda:latest", None),
    ("", None),
])
def test_a_tag_names_one_of_the_fleets_definitions_or_none(tag, expected):
    assert fleet_definition(tag, FLEET) == expected


def test_no_fleet_definition_means_every_tag_is_refused():
    assert fleet_definition("finetune-cuda", ()) is None and fleet_definition(OURS, ()) is None


def test_an_ambiguous_name_is_refused_rather_than_guessed():
    two = (OURS, "arn:aws:batch:us-east-2:111111111111:job-definition/finetune-cuda:8")
    assert fleet_definition("finetune-cuda", two) is None
    assert fleet_definition("finetune-cuda:8", two) == two[1]


def test_a_fleet_entry_without_revision_is_never_matched():
    """IAM matches the request's ARN, which carries the revision: an entry without one would be met by AccessDenied."""
    bare = ("arn:aws:batch:us-east-2:111111111111:job-definition/finetune-cuda",)
    assert fleet_definition("finetune-cuda", bare) is None and fleet_definition(bare[0], bare) is None


def _job(job_id: str, tag: str | None) -> HeldJob:
    return HeldJob(job_id=job_id, name="finetune", queue="arn:aws:batch:us-east-2:111111111111:job-queue/pretrain",
                   created=NOW - timedelta(hours=2), status_reason="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
                   gpu_job_definition=tag, nodes=2)


def test_held_jobs_move_only_to_the_fleets_definitions():
    items = held([_job("a", "finetune-cuda"), _job("b", "admin-role-job"), _job("c", None)], POLICY, now=NOW,
                 definitions=FLEET)
    assert [type(i) for i in items] == [Move, Refuse, Tell]
    assert isinstance(items[0], Move) and items[0].definition == OURS   # the revision ARN, not the tag's text
    assert [type(i) for i in held([_job("a", "finetune-cuda")], POLICY, now=NOW)] == [Refuse]   # none declared


def test_the_refusal_names_the_tag_and_the_fleets_definitions():
    subject, message = refuse_text(_job("b", "admin-role-job"), timedelta(minutes=75), FLEET)
    assert subject == "neuronfleet: job finetune not moved: its GPU job definition is not the fleet's"
    assert "names admin-role-job, which is not one of the fleet's GPU job definitions" in message
    assert OURS in message and OTHER in message and "75 min" in message and "stays where it is" in message
    assert "GpuPool.add_job_definition" in refuse_text(_job("b", "x"), timedelta(minutes=61), ())[1]


def test_the_fleets_definitions_travel_in_the_environment():
    s = LifecycleConfig(fleet="nf", topic_arn="arn:aws:sns:us-east-2:111111111111:t", ledger_table="t",
                        policy=POLICY, policy_parameter="/neuronfleet/nf/capacity-policy",
                        clusters=(ClusterRef(name="c", queue_arn="q", instance_type="trn2.48xlarge",
                                               drain_bucket="b"),), gpu_queue_arn="gq", gpu_job_definitions=FLEET)
    env = s.to_environment()
    back = LifecycleConfig.from_environment(env, read_parameter=lambda name: POLICY.to_json())
    assert back.gpu_job_definitions == FLEET
    del env["GPU_JOB_DEFINITIONS"]
    assert LifecycleConfig.from_environment(env, read_parameter=lambda n: POLICY.to_json()).gpu_job_definitions == ()
    with pytest.raises(Exception, match=r"GPU_JOB_DEFINITIONS.*a JSON list of the fleet's GPU job definition ARNs"):
        LifecycleConfig.from_environment({**env, "GPU_JOB_DEFINITIONS": '[""]'},
                                         read_parameter=lambda n: POLICY.to_json())

"""The AWS facts job isolation and alert subscriptions rest on, pinned against AWS's own service models in botocore
1.44.5 (the kit's copies of them live in neuronfleet.settings.training and neuronfleet.alerts.topic)."""

from __future__ import annotations

import re

import botocore.session
import pytest

from neuronfleet.alerts.topic import UNSUBSCRIBE_PROTECTION
from neuronfleet.settings.training import BATCH_MIN_TIMEOUT_S, CAPACITY_BLOCK_HOURS, MAX_JOB_TIMEOUT_S


@pytest.fixture(scope="module")
def session() -> botocore.session.Session:
    return botocore.session.get_session()


def _doc(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)


def test_batch_timeout_minimum_and_it_covers_the_whole_multi_node_job(session) -> None:
    doc = _doc(session.get_service_model("batch").shape_for("JobTimeout").members["attemptDurationSeconds"]
               .documentation)
    assert f"The minimum value for the timeout is {BATCH_MIN_TIMEOUT_S} seconds." in doc
    assert "For multi-node parallel (MNP) jobs, the timeout applies to the whole job, not to the individual nodes." \
        in doc
    assert "maximum" not in doc.lower()  # Batch documents none: the kit's ceiling is its own (the longest block)


def test_capacity_block_durations(session) -> None:
    op = session.get_service_model("ec2").operation_model("DescribeCapacityBlockOfferings")
    doc = _doc(op.input_shape.members["CapacityDurationHours"].documentation)
    assert "You must specify the duration in 1-day increments up 14 days, and in 7-day increments up to 182 days." \
        in doc
    assert CAPACITY_BLOCK_HOURS == (24, 182 * 24) and MAX_JOB_TIMEOUT_S == 182 * 24 * 3600


def test_the_job_role_is_ecs_task_role(session) -> None:
    doc = session.get_service_model("batch").shape_for("ContainerProperties").members["jobRoleArn"].documentation
    assert "task-iam-roles.html" in doc and "the container can assume" in doc


def test_only_an_authenticated_confirmation_protects_a_subscription(session) -> None:
    """CloudFormation cannot confirm an e-mail subscription (the token goes to the mailbox): protection is the
    ConfirmSubscription flag, and GetSubscriptionAttributes' ConfirmationWasAuthenticated shows it."""
    sns = session.get_service_model("sns")
    confirm = sns.operation_model("ConfirmSubscription").input_shape.members
    assert "only the topic owner and the subscription owner can unsubscribe" in _doc(
        confirm["AuthenticateOnUnsubscribe"].documentation)
    attrs = _doc(sns.operation_model("GetSubscriptionAttributes").output_shape.members["Attributes"].documentation)
    assert "ConfirmationWasAuthenticated \u2013 true if the subscription confirmation request was authenticated." in attrs
    assert "--authenticate-on-unsubscribe true" in UNSUBSCRIBE_PROTECTION
    assert "ConfirmationWasAuthenticated" in UNSUBSCRIBE_PROTECTION
    cfn_subscription = session.get_service_model("sns").operation_model("Subscribe").input_shape.members
    assert "AuthenticateOnUnsubscribe" not in cfn_subscription  # Subscribe cannot ask for it; only the confirmation

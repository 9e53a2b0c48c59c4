"""neuronfleet.core.nag's one table of kept findings (issue 36: the compliance packs and checkov) and acknowledge():
the ids are the ones cdk-nag 3.0.2 reports (an acknowledgement by the table silences the pack), checkov's skips land
in the resource's metadata with the table's reason, and the kit's buckets carry only the skips that apply."""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_nag import NIST80053R5Checks

from neuronfleet.core.nag import (
    ACKNOWLEDGED,
    LOG_GROUP_KMS,
    SESSION_MANAGER,
    SQS_MANAGED,
    acknowledge,
    pack_ids,
    skip_checkov,
)
from neuronfleet.core.storage import secure_bucket

_ID = re.compile(r"(NIST\.800\.53\.R5|HIPAA\.Security|PCI\.DSS\.321)-[A-Z][A-Za-z0-9]+|CKV_AWS_[0-9]+")


def test_every_id_is_a_pack_rule_or_a_checkov_check_with_a_reason() -> None:
    for rule_id, reason in ACKNOWLEDGED.items():
        assert _ID.fullmatch(rule_id), rule_id
        assert len(reason) > 40, rule_id
    assert pack_ids("LambdaDLQ") == ["NIST.800.53.R5-LambdaDLQ", "HIPAA.Security-LambdaDLQ"]
    with pytest.raises(KeyError, match="NoSuchRule"):
        pack_ids("NoSuchRule")


def _nist_app_with_log_group(acknowledged: bool) -> cdk.App:
    app = cdk.App()
    cdk.Validations.of(app).add_plugins(NIST80053R5Checks(app))
    stack = cdk.Stack(app, "S")
    group = logs.LogGroup(stack, "Logs", removal_policy=cdk.RemovalPolicy.DESTROY,
                          retention=logs.RetentionDays.ONE_MONTH)
    if acknowledged:
        acknowledge(group, "CloudWatchLogGroupEncrypted", "CKV_AWS_158")
    return app


def test_the_table_id_silences_cdk_nag_3() -> None:
    with pytest.raises(RuntimeError, match=r"NIST\.800\.53\.R5-CloudWatchLogGroupEncrypted"):
        _nist_app_with_log_group(acknowledged=False).synth()
    assembly = _nist_app_with_log_group(acknowledged=True).synth()  # no finding left: synth passes
    template = assembly.get_stack_by_name("S").template
    (group,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"]
    assert group["Metadata"]["checkov"]["skip"] == [{"id": "CKV_AWS_158", "comment": LOG_GROUP_KMS}]


def test_checkov_skips_merge_and_check_their_reason() -> None:
    stack = cdk.Stack(cdk.App(), "S")
    queue = sqs.Queue(stack, "Q", encryption=sqs.QueueEncryption.SQS_MANAGED)
    cfn = queue.node.default_child
    assert isinstance(cfn, cdk.CfnResource)
    cfn.add_metadata("checkov", {"skip": [{"id": "CKV_AWS_999", "comment": "the owner's own"}]})
    acknowledge(queue, "CKV_AWS_27")
    acknowledge(queue, "CKV_AWS_27")  # twice: listed once
    skip_checkov(cfn, "CKV_AWS_111", reason=SESSION_MANAGER)  # one of the reasons the table allows
    assert cfn.get_metadata("checkov")["skip"] == [
        {"id": "CKV_AWS_999", "comment": "the owner's own"}, {"id": "CKV_AWS_27", "comment": SQS_MANAGED},
        {"id": "CKV_AWS_111", "comment": SESSION_MANAGER}]
    with pytest.raises(ValueError, match="CKV_AWS_27"):
        skip_checkov(cfn, "CKV_AWS_27", reason="because")
    with pytest.raises(KeyError):
        acknowledge(queue, "CKV_AWS_1")
    with pytest.raises(TypeError, match="no CloudFormation resource"):
        acknowledge(stack, "CKV_AWS_27")


def _skips(template: Template, logical_prefix: str) -> set[str]:
    (resource,) = [r for k, r in template.to_json()["Resources"].items()
                   if k.startswith(logical_prefix) and r["Type"] == "AWS::S3::Bucket"]
    return {s["id"] for s in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])}


def test_buckets_carry_only_the_skips_that_apply() -> None:
    stack = cdk.Stack(cdk.App(), "S")
    logs_bucket = secure_bucket(stack, "Logs")
    secure_bucket(stack, "Data", versioned=True, access_logs=logs_bucket, log_prefix="data/")
    secure_bucket(stack, "Results", access_logs=logs_bucket, log_prefix="results/")
    template = Template.from_stack(stack)
    assert _skips(template, "Logs") == {"CKV_AWS_18", "CKV_AWS_21"}
    assert _skips(template, "Data") == set()
    assert _skips(template, "Results") == {"CKV_AWS_21"}
    assert isinstance(logs_bucket, s3.Bucket)

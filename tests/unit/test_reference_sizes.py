"""What a reference deploys as, at its longest: neuronfleet.core.rules.REFERENCE_CHARS pinned against botocore 1.44.5
(its partitions.json and the service models' shapes and words), and CloudFormationLimits sizing references by what
they refer to (a resource of the template, a pseudo parameter, another stack's export)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import botocore
import botocore.session

from neuronfleet.core.limits import assembly_exports, template_problems
from neuronfleet.core.rules import (
    LAMBDA_ENVIRONMENT_BYTES,
    LONGEST_PARTITION,
    LONGEST_REGION,
    LONGEST_URL_SUFFIX,
    REFERENCE_CHARS,
    TOKEN_ESTIMATE_CHARS,
)

SESSION = botocore.session.get_session()


def _doc(service: str, operation: str, member: str) -> str:
    shape = SESSION.get_service_model(service).operation_model(operation).input_shape.members[member]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", shape.documentation))


def _max(service: str, shape: str) -> int:
    return int(SESSION.get_service_model(service).shape_for(shape).metadata["max"])


def test_partitions_regions_and_suffixes_are_botocores_longest() -> None:
    data = json.loads((Path(os.path.dirname(botocore.__file__)) / "data" / "partitions.json").read_text())
    assert max(len(p["id"]) for p in data["partitions"]) == LONGEST_PARTITION
    assert max(len(r) for p in data["partitions"] for r in p["regions"]) == LONGEST_REGION
    assert max(len(p["outputs"]["dnsSuffix"]) for p in data["partitions"]) == LONGEST_URL_SUFFIX


def test_the_names_are_what_botocore_says() -> None:
    arn = f"arn:{'p' * LONGEST_PARTITION}:%s:{'r' * LONGEST_REGION}:111111111111:%s"
    assert "must be between 1 and 256 characters long" in _doc("sns", "CreateTopic", "Name")
    assert REFERENCE_CHARS[("AWS::SNS::Topic", "Ref")] == len(arn % ("sns", "")) + 256
    assert "A queue name can have up to 80 characters" in _doc("sqs", "CreateQueue", "QueueName")
    assert REFERENCE_CHARS[("AWS::SQS::Queue", "Arn")] == len(arn % ("sqs", "")) + 80
    assert REFERENCE_CHARS[("AWS::SQS::Queue", "Ref")] == len(
        f"https://sqs.{'r' * LONGEST_REGION}.{'s' * LONGEST_URL_SUFFIX}/111111111111/") + 80
    assert _max("dynamodb", "TableName") == REFERENCE_CHARS[("AWS::DynamoDB::Table", "Ref")] == 255
    assert REFERENCE_CHARS[("AWS::DynamoDB::Table", "Arn")] == len(arn % ("dynamodb", "table/")) + 255
    assert "It can be up to 128 letters long" in _doc("batch", "CreateJobQueue", "jobQueueName")
    assert REFERENCE_CHARS[("AWS::Batch::JobQueue", "JobQueueArn")] == len(arn % ("batch", "job-queue/")) + 128
    assert _max("cloudwatch", "AlarmName") == REFERENCE_CHARS[("AWS::CloudWatch::Alarm", "Ref")] == 255
    assert _max("logs", "LogGroupName") == REFERENCE_CHARS[("AWS::Logs::LogGroup", "Ref")] == 512
    assert REFERENCE_CHARS[("AWS::Logs::LogGroup", "Arn")] == len(arn % ("logs", "log-group:")) + 512 + len(":*")
    assert "it is limited to 64 characters in length" in _doc("lambda", "CreateFunction", "FunctionName")
    assert REFERENCE_CHARS[("AWS::Lambda::Function", "Ref")] == 64
    assert _max("iam", "roleNameType") == REFERENCE_CHARS[("AWS::IAM::Role", "Ref")] == 64
    assert REFERENCE_CHARS[("AWS::IAM::Role", "Arn")] == len(
        f"arn:{'p' * LONGEST_PARTITION}:iam::111111111111:role") + _max("iam", "pathType") + 64
    (key_id,) = re.findall(r"Key ID: (\S+)", _doc("kms", "DescribeKey", "KeyId"))
    assert len(key_id) == REFERENCE_CHARS[("AWS::KMS::Key", "Ref")] == 36
    assert REFERENCE_CHARS[("AWS::S3::Bucket", "Ref")] == 63
    assert REFERENCE_CHARS[("AWS::S3::Bucket", "Arn")] == len(f"arn:{'p' * LONGEST_PARTITION}:s3:::") + 63


def _function(variables: dict[str, Any]) -> dict[str, Any]:
    return {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": variables}}}


def _env_problem(template: dict[str, Any], exports: Any = None) -> list[str]:
    return [str(p) for p in template_problems("s", template, exports) if p.rule == "lambda-environment-size"]


def test_a_reference_is_sized_by_what_it_refers_to() -> None:
    """Fifteen topic ARNs pass at 64 characters each (the old estimate) and are refused at their longest (306):
    CloudFormation may deploy exactly that."""
    topic = {"Type": "AWS::SNS::Topic"}
    variables = {f"T{i:02d}": {"Ref": "Topic"} for i in range(15)}
    template = {"Resources": {"Topic": topic, "Fn": _function(variables)}}
    refs = 15 * (3 + REFERENCE_CHARS[("AWS::SNS::Topic", "Ref")])
    assert refs > LAMBDA_ENVIRONMENT_BYTES > 15 * (3 + TOKEN_ESTIMATE_CHARS)
    (problem,) = _env_problem(template)
    assert f"got '{refs:,} bytes of environment'" in problem and "T00 (306)" in problem
    # the same references to something the table does not know keep the old estimate: no finding
    unknown = {"Resources": {"Topic": {"Type": "AWS::Custom::Thing"}, "Fn": _function(variables)}}
    assert _env_problem(unknown) == []
    # a pseudo parameter, and an attribute
    both = {"Resources": {"Q": {"Type": "AWS::SQS::Queue"}, "Fn": _function({
        "R": {"Ref": "AWS::Region"}, "A": {"Fn::GetAtt": ["Q", "Arn"]}, "S": {"Fn::GetAtt": "Q.QueueName"}})}}
    assert _env_problem(both, None) == []
    from neuronfleet.core.limits import _Context, _deployed_length

    context = _Context(both["Resources"], {})
    assert [_deployed_length(v, context) for v in both["Resources"]["Fn"]["Properties"]["Environment"]["Variables"]
            .values()] == [LONGEST_REGION, REFERENCE_CHARS[("AWS::SQS::Queue", "Arn")], 80]


def test_an_import_is_sized_as_the_export_it_names_in_the_exporting_template() -> None:
    exporter = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {"O": {"Value": {"Ref": "Topic"}, "Export": {"Name": "alerts:TopicArn"}}}}
    importer = {"Resources": {"Fn": _function({f"T{i:02d}": {"Fn::ImportValue": "alerts:TopicArn"} for i in range(15)})}}
    exports = assembly_exports([exporter, importer])
    assert set(exports) == {"alerts:TopicArn"}
    assert _env_problem(importer) == []  # no exports known: 64 each
    (problem,) = _env_problem(importer, exports)
    assert "T00 (306)" in problem



def test_ec2s_user_data_limit_is_what_botocore_says() -> None:
    from neuronfleet.core.rules import EC2_USER_DATA_BYTES

    shape = SESSION.get_service_model("ec2").shape_for("RequestLaunchTemplateData").members["UserData"]
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", shape.documentation))
    assert "User data is limited to 16 KB" in text and "MIME multi-part" in text
    assert EC2_USER_DATA_BYTES == 16 * 1024

"""neuronfleet.core.rules: each rule returns a valid value and refuses an invalid one saying what is allowed.

Limits that botocore's service models carry are compared with the installed botocore here, so a new botocore
that changes them fails this test instead of silently disagreeing with AWS.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date
from functools import cache
from pathlib import Path

import pytest

from neuronfleet.core import rules

ROOT = Path(__file__).resolve().parents[2]


def refused(rule, *args) -> str:
    with pytest.raises(ValueError) as info:
        rule(*args)
    return str(info.value)


@cache
def botocore_shape(service: str, shape: str) -> dict:
    import botocore.session

    return botocore.session.get_session().get_service_model(service).shape_for(shape).metadata


# ----------------------------------------------------------------------------------------- schedules

@pytest.mark.parametrize("expr", [
    "cron(0 13 ? * MON-FRI *)", "cron(0 2 ? * * *)", "cron(30 6 ? * MON *)", "cron(0/15 8-18 ? * 2-6 *)",
    "cron(0 8 L * ? *)", "cron(0 8 15W * ? 2026-2030)", "cron(0 8 ? JAN,DEC 6L *)", "cron(0 8 ? * 2#1 *)",
    "rate(1 minute)", "rate(5 minutes)", "rate(1 hour)", "rate(12 hours)", "rate(1 day)", "rate(7 days)",
    "at(2026-12-01T08:00:00)", "at(2028-02-29T23:59:59)",
])
def test_schedule_expression_accepts(expr: str) -> None:
    assert rules.schedule_expression(expr) == expr


@pytest.mark.parametrize("expr", [
    "cron(every weekday)", "rate(0 minutes)", "rate(1 minutes)", "rate(2 hour)", "cron(0 8 * * * *)",
    "cron(0 8 ? * ? *)", "cron(0 13 * * MON-FRI)", "cron(60 8 ? * * *)", "cron(0 24 ? * * *)",
    "cron(0 8 32 * ? *)", "cron(0 8 ? 13 * *)", "cron(0 8 ? * FOO *)", "cron(0 8 ? * 2#6 *)",
    "cron(0  8 ? * * *)", "rate(-1 minutes)", "rate(1.5 hours)", "rate(5 weeks)", "rate(5minutes)",
    "at(2026-13-01T08:00:00)", "at(2027-02-29T08:00:00)", "at(2026-12-01 08:00:00)", "cron(0 8 ? * MON-FRI *",
    "every day at 8", "",
])
def test_schedule_expression_refuses(expr: str) -> None:
    text = refused(rules.schedule_expression, expr)
    assert "cron(" in text and "rate(N unit)" in text and "at(yyyy-mm-ddThh:mm:ss)" in text
    assert "exactly one of day-of-month/day-of-week '?'" in text


def test_schedule_limit_matches_botocore() -> None:
    import botocore.session

    op = botocore.session.get_session().get_service_model("application-autoscaling").operation_model(
        "PutScheduledAction")
    assert op.input_shape.members["Schedule"].metadata["max"] == 1600
    assert refused(rules.schedule_expression, "rate(" + "1" * 1600 + " minutes)")


# ------------------------------------------------------------------------------------------------ tags

@pytest.mark.parametrize("key", ["cost-center", "team:ml/platform", "Owner Name", "k" * 128, "é_ü.=+@-", "a"])
def test_tag_key_accepts(key: str) -> None:
    assert rules.tag_key(key) == key


@pytest.mark.parametrize("key", ["aws:team", "AWS:team", "Aws:Team", "", "k" * 129, "cost#center", "team!", "a*b"])
def test_tag_key_refuses(key: str) -> None:
    text = refused(rules.tag_key, key)
    assert "1 to 128 characters" in text and "_ . : / = + - @" in text and "'aws:'" in text


@pytest.mark.parametrize("value", ["", "ml-platform", "x" * 256, "a b:c/d=e+f-g@h_i.j", "ünïcode 42"])
def test_tag_value_accepts(value: str) -> None:
    assert rules.tag_value(value) == value


@pytest.mark.parametrize("value", ["x" * 257, "ml#platform", "100%", "a;b", "<script>"])
def test_tag_value_refuses(value: str) -> None:
    text = refused(rules.tag_value, value)
    assert "at most 256 characters" in text and "_ . : / = + - @" in text


def test_tag_limits_match_botocore() -> None:
    assert botocore_shape("resourcegroupstaggingapi", "TagKey")["max"] == rules.TAG_KEY_MAX
    assert botocore_shape("resourcegroupstaggingapi", "TagKey")["min"] == 1
    assert botocore_shape("resourcegroupstaggingapi", "TagValue")["max"] == rules.TAG_VALUE_MAX
    # SageMaker spells out the characters: the same set as ours.
    assert botocore_shape("sagemaker", "TagKey")["pattern"] == r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)"


# ------------------------------------------------------------------------------------- regions and AZs

@pytest.mark.parametrize("name", ["us-east-1", "us-east-2", "ap-south-2", "eu-west-1", "us-gov-west-1", "cn-north-1"])
def test_region_accepts(name: str) -> None:
    assert rules.region(name) == name


@pytest.mark.parametrize(("name", "near"), [("us-east-7", "us-east-1"), ("us-east2", "us-east-2"),
                                            ("useast-1", "us-east-1"), ("eu-west", "eu-west-1"),
                                            ("US-EAST-1", None), ("", None)])
def test_region_refuses_with_close_matches(name: str, near: str | None) -> None:
    text = refused(rules.region, name)
    assert text.startswith("an AWS region, e.g. ")
    if near:
        assert near in text
    assert text.count(",") < 6  # a few close matches, not every region


def test_regions_data_is_botocore_endpoints() -> None:
    import botocore

    endpoints = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text())
    expected = sorted({r for p in endpoints["partitions"] for r in p["regions"]})
    shipped = json.loads((ROOT / "constructs" / "neuronfleet" / "facts" / "data" / "regions.json").read_text())
    assert shipped["regions"] == expected
    assert botocore.__version__ in shipped["source"] and shipped["as_of"]


@pytest.mark.parametrize(("az", "region"), [("us-east-2a", "us-east-2"), ("us-east-2c", "us-east-2"),
                                            ("us-east-1f", "us-east-1"), ("ap-south-2b", "ap-south-2"),
                                            ("us-west-2d", "us-west-2")])
def test_availability_zone_accepts(az: str, region: str) -> None:
    assert rules.availability_zone(az, region) == az


@pytest.mark.parametrize(("az", "region"), [("us-east-2z", "us-east-2"), ("us-east-2d", "us-east-2"),
                                            ("us-west-2b", "us-east-2"), ("us-east-1g", "us-east-1"),
                                            ("us-east-2", "us-east-2"), ("use2-az1", "us-east-2")])
def test_availability_zone_refuses_listing_the_region_zones(az: str, region: str) -> None:
    text = refused(rules.availability_zone, az, region)
    assert text == f"an availability zone of {region}: " + ", ".join(rules.known_availability_zones(region))


def test_us_east_2_has_three_zones() -> None:
    assert rules.known_availability_zones("us-east-2") == ("us-east-2a", "us-east-2b", "us-east-2c")


def test_availability_zone_data_is_moto() -> None:
    import gzip

    import moto

    folder = Path(moto.__file__).parent / "ec2" / "resources" / "instance_type_offerings" / "availability-zone"
    with gzip.open(folder / "us-east-2.json.gz") as fh:
        offered = sorted({row["Location"] for row in json.load(fh)})
    assert list(rules.known_availability_zones("us-east-2")) == offered


def test_refresh_data_check_refuses_a_stale_file(tmp_path, monkeypatch, capsys) -> None:
    """--check itself runs once per `make test` (tests/unit/test_catalog.py, against the committed files); here it is
    shown failing: on a copy of regions.json with one region dropped, or missing, and passing when only as_of moved."""
    import json
    import sys

    from scripts import refresh_data

    committed = json.loads((refresh_data.DATA / "regions.json").read_text())
    monkeypatch.setattr(refresh_data, "DATA", tmp_path)
    monkeypatch.setattr(refresh_data, "FILES", {"regions.json": refresh_data.regions})
    monkeypatch.setattr(sys, "argv", ["refresh_data.py", "--check"])
    copy = tmp_path / "regions.json"

    def check(doc: dict | None) -> tuple[int, str]:
        if doc is not None:
            copy.write_text(json.dumps(doc))
        code = refresh_data.main()
        return code, capsys.readouterr().err

    assert check(committed | {"as_of": "1999-01-01"}) == (0, "")
    stale = committed | {"regions": committed["regions"][1:]}
    assert check(stale) == (1, "stale: regions.json: run python scripts/refresh_data.py\n")
    assert json.loads(copy.read_text()) == stale  # --check writes nothing
    copy.unlink()
    assert check(None) == (1, "stale: regions.json: run python scripts/refresh_data.py\n")
    assert not copy.exists()


# ---------------------------------------------------------------------------------------------- e-mail

@pytest.mark.parametrize("addr", ["ml-platform@example.com", "finops+alerts@corp.example.co.uk", "a@b.io",
                                  "first.last@sub-domain.example.org"])
def test_email_accepts(addr: str) -> None:
    assert rules.email(addr) == addr


@pytest.mark.parametrize("addr", ["finops.example.com", "ml platform@example.com", "ml-platform@example",
                                  "a@b@example.com", "@example.com", "a@-example.com", "a@example..com",
                                  "a" * 65 + "@example.com", "a@" + "b" * 250 + ".com", "a@1.2.3.4"])
def test_email_refuses(addr: str) -> None:
    text = refused(rules.email, addr)
    assert "one @, no spaces, a domain with a dot, at most 254 characters" in text


# -------------------------------------------------------------------------------------- resource names

@pytest.mark.parametrize(("kind", "name"), [
    ("cloudformation-stack", "nf-prod-train-pretrain"), ("cloudformation-stack", "A" * 128),
    ("sagemaker-endpoint", "nf-prod-chat"), ("sagemaker-endpoint", "a--b"), ("sagemaker-endpoint", "x" * 63),
    ("batch-job-queue", "nf_prod-queue"), ("batch-compute-environment", "C" * 128), ("sns-topic", "t" * 256),
    ("budget", "nf-prod monthly (USD)"), ("dynamodb-table", "abc"), ("dynamodb-table", "nf.prod_table-1"),
])
def test_resource_name_accepts(kind: str, name: str) -> None:
    assert rules.check_resource_name(kind, name) == name
    assert rules.resource_name(kind)(name) == name


@pytest.mark.parametrize(("kind", "name"), [
    ("cloudformation-stack", "1nf-prod"), ("cloudformation-stack", "nf_prod"), ("cloudformation-stack", "A" * 129),
    ("sagemaker-endpoint", "-chat"), ("sagemaker-endpoint", "chat-"), ("sagemaker-endpoint", "x" * 64),
    ("sagemaker-endpoint", "chat.v1"), ("batch-job-queue", "queue.1"), ("batch-compute-environment", "C" * 129),
    ("sns-topic", "t" * 257), ("sns-topic", "topic.fifo!"), ("budget", "a:b"), ("budget", "a\\b"),
    ("budget", "b" * 101), ("dynamodb-table", "ab"), ("dynamodb-table", "t" * 256), ("dynamodb-table", "a b c"),
])
def test_resource_name_refuses(kind: str, name: str) -> None:
    text = refused(rules.check_resource_name, kind, name)
    assert text.startswith(f"a {kind} name of at most {rules.RESOURCE_NAMES[kind].max_length} characters: ")


@pytest.mark.parametrize(("kind", "service", "shape"), [
    ("sagemaker-endpoint", "sagemaker", "EndpointName"), ("dynamodb-table", "dynamodb", "TableName"),
    ("budget", "budgets", "BudgetName"),
])
def test_resource_name_limits_match_botocore(kind: str, service: str, shape: str) -> None:
    meta = botocore_shape(service, shape)
    assert rules.RESOURCE_NAMES[kind].max_length == meta["max"]
    if kind == "sagemaker-endpoint":
        assert rules.RESOURCE_NAMES[kind].pattern == meta["pattern"]
    if kind == "dynamodb-table":
        assert meta["pattern"] == "[a-zA-Z0-9_.-]+" and meta["min"] == 3
    if kind == "budget":
        assert "[^:\\\\]+" in meta["pattern"]


def test_resource_names_are_data_with_sources() -> None:
    for kind, (max_length, pattern, source) in rules.RESOURCE_NAMES.items():
        assert max_length > 0 and re.compile(pattern) and re.search(r"read 2026-\d\d-\d\d", source), kind
    with pytest.raises(KeyError):
        rules.resource_name("s3-bucket")


# ---------------------------------------------------------------------------------- identifiers, URIs

@pytest.mark.parametrize("s", ["meta-llama/Llama-3.2-1B-Instruct", "BAAI/bge-large-en-v1.5", "org_1/model.v2",
                               "a/" + "b" * 96])
def test_huggingface_model_id_accepts(s: str) -> None:
    assert rules.huggingface_model_id(s) == s


@pytest.mark.parametrize("s", ["meta-llama/Llama 3.2", "Llama-3.2-1B", "a/b/c", "org/-model", "org/model.",
                               "org/mo--del", "org/mo..del", "org/model.git", "a/" + "b" * 97, "org/"])
def test_huggingface_model_id_refuses(s: str) -> None:
    text = refused(rules.huggingface_model_id, s)
    assert "org/name" in text
    assert "1 to 96 letters, digits, '-', '_' or '.'" in text


@pytest.mark.parametrize("s", ["5a8abab4a5d6f164389b1079fb721cfab8d7126c", "0" * 40])
def test_huggingface_revision_accepts_a_commit(s: str) -> None:
    assert rules.huggingface_revision(s) == s


@pytest.mark.parametrize("s", ["main", "v1.0", "5a8abab", "5A8ABAB4A5D6F164389B1079FB721CFAB8D7126C",
                               "5a8abab4a5d6f164389b1079fb721cfab8d7126c0", 40])
def test_huggingface_revision_refuses_branches_tags_and_short_shas(s) -> None:
    assert "a commit sha of the model repository: 40 lower-case hex digits" in refused(rules.huggingface_revision, s)


@pytest.mark.parametrize("s", ["arn:aws:secretsmanager:us-east-2:222222222222:secret:nf-pilot/hf-token-Ab12Cd",
                               "arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:a+b=c.d@e_f-000000",
                               "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:tok-ABCdef"])
def test_secret_arn_accepts_complete_arns(s: str) -> None:
    assert rules.secret_arn(s) == s


@pytest.mark.parametrize("s", ["arn:aws:secretsmanager:us-east-2:222222222222:secret:nf-pilot/hf-token",  # partial
                               "nf-pilot/hf-token-Ab12Cd", "arn:aws:ssm:us-east-2:222222222222:parameter/hf-Ab12Cd",
                               "arn:aws:secretsmanager:us-east-2:2222:secret:tok-Ab12Cd",
                               "arn:aws:secretsmanager:us-east-2:222222222222:secret:has space-Ab12Cd",
                               "arn:aws:secretsmanager:us-east-2:222222222222:secret:" + "n" * 513 + "-Ab12Cd"])
def test_secret_arn_refuses_partial_and_other_arns(s: str) -> None:
    assert "the complete ARN of a Secrets Manager secret" in refused(rules.secret_arn, s)


def test_secret_name_limit_matches_botocore() -> None:
    import botocore.session
    assert botocore_shape("secretsmanager", "NameType")["max"] == rules.SECRET_NAME_MAX
    doc = botocore.session.get_session().get_service_model("secretsmanager").shape_for(
        "CreateSecretRequest").members["Name"].documentation
    assert "ASCII letters, numbers, and the following characters: /_+=.@-" in doc
    assert "a hyphen and six random characters" in doc


def test_sagemaker_serving_limits_match_botocore() -> None:
    from neuronfleet.settings import inference as s
    timeout = botocore_shape("sagemaker", "VariantInstanceProvisionTimeoutInSeconds")
    assert (timeout["min"], timeout["max"]) == (s.MIN_PROVISION_TIMEOUT_S, s.MAX_PROVISION_TIMEOUT_S)
    assert s.MIN_PROVISION_TIMEOUT_S <= s.DEFAULT_POOL_PROVISION_TIMEOUT_S <= s.MAX_PROVISION_TIMEOUT_S
    import botocore.session
    model = botocore.session.get_session().get_service_model("sagemaker")
    variant = model.shape_for("ProductionVariant").members
    assert variant["VariantInstanceProvisionTimeoutInSeconds"].name == "VariantInstanceProvisionTimeoutInSeconds"
    assert "retries with the next instance pool" in variant["VariantInstanceProvisionTimeoutInSeconds"].documentation
    assert "VariantInstanceProvisionTimeoutInSeconds" not in model.shape_for("InstancePool").members
    # the bare-flag variable (SM_ON_ALLOW_NON_CACHED_MODEL="") is a valid container environment value
    assert botocore_shape("sagemaker", "EnvironmentValue")["min"] == 0
    startup = botocore_shape("sagemaker", "ProductionVariantContainerStartupHealthCheckTimeoutInSeconds")
    assert startup["max"] == s.COMPILE_AT_START_TIMEOUT_S == s.MAX_TIMEOUT_S


@pytest.mark.parametrize("s", ["s3://example-models/llama/model.tar.gz", "s3://a.b-c/k", "s3://abc/" + "k" * 1024,
                               "s3://my-bucket-123/dir/"])
def test_s3_uri_accepts(s: str) -> None:
    assert rules.s3_uri(s) == s


@pytest.mark.parametrize("s", ["s3://Example_Models/x", "s3://bucket", "s3://bucket/", "https://b.s3.amazonaws.com/k",
                               "s3://ab/k", "s3://a..b/k", "s3://192.168.1.1/k", "s3://xn--bucket/k",
                               "s3://bucket-s3alias/k", "s3://abc/" + "k" * 1025])
def test_s3_uri_refuses(s: str) -> None:
    assert "s3://bucket/key" in refused(rules.s3_uri, s)


@pytest.mark.parametrize("s", ["s3://models/llama/*", "s3://models/llama-?/model.tar.gz",
                               "s3://models/${aws:username}/model.tar.gz", "s3://models/*/prompts.jsonl"])
def test_s3_uri_refuses_what_an_iam_resource_reads_as_a_wildcard(s: str) -> None:
    """Issue 36, finding 8: a fleet-file URI becomes an IAM resource; '*', '?' and '${...}' there widen the grant."""
    assert "without '*', '?' or '${'" in refused(rules.s3_uri, s)


@pytest.mark.parametrize("s", [
    "763104351884.dkr.ecr.us-east-2.amazonaws.com/djl-inference:0.33.0-neuronx-sdk2.24.1",
    "111111111111.dkr.ecr.us-east-1.amazonaws.com/team/model-server",
    "111111111111.dkr.ecr.us-west-2.amazonaws.com/repo@sha256:" + "a" * 64,
])
def test_ecr_image_uri_accepts(s: str) -> None:
    assert rules.ecr_image_uri(s) == s
    assert rules.container_image(s) == s


@pytest.mark.parametrize("s", [
    "1234.dkr.ecr.us-east-2.amazonaws.com/tgi:latest", "111111111111.dkr.ecr.us-east-7.amazonaws.com/r:t",
    "111111111111.dkr.ecr.us-east-1.amazonaws.com/Repo:t", "111111111111.dkr.ecr.us-east-1.amazonaws.com/r@sha256:xyz",
    "docker.io/library/python:3.11", "111111111111.dkr.ecr.us-east-1.amazonaws.com/repo:" + "t" * 301,
])
def test_ecr_image_uri_refuses(s: str) -> None:
    assert "<12-digit account>.dkr.ecr.<region>.amazonaws.com/<repository>" in refused(rules.ecr_image_uri, s)


def test_ecr_limits_match_botocore() -> None:
    assert botocore_shape("ecr", "RepositoryName")["pattern"] == rules.ECR_REPOSITORY_PATTERN
    assert botocore_shape("ecr", "ImageTag")["max"] == rules.ECR_TAG_MAX


@pytest.mark.parametrize("s", ["pytorch-training-neuronx:2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04",
                               "public.ecr.aws/neuron/pytorch-inference-neuronx:latest",
                               "public.ecr.aws/neuron/pytorch-inference-neuronx"])
def test_container_image_accepts(s: str) -> None:
    assert rules.container_image(s) == s


@pytest.mark.parametrize("s", ["pytorch training:1", "latest", "1234.dkr.ecr.us-east-2.amazonaws.com/x:y",
                               "public.ecr.aws/NEURON/x:1", "repo:"])
def test_container_image_refuses(s: str) -> None:
    assert "a container image: an ECR URI" in refused(rules.container_image, s)


@pytest.mark.parametrize("s", ["/aws/service/neuron/dlami/multi-framework/ubuntu-22.04/latest/image_id",
                               "/nf/prod/ami", "plain-name_1.2", "/" + "/".join(["l"] * 15)])
def test_ssm_parameter_name_accepts(s: str) -> None:
    assert rules.ssm_parameter_name(s) == s


@pytest.mark.parametrize("s", ["/aws/service/neuron dlami", "", "a/b", "/a//b", "/" + "/".join(["l"] * 16),
                               "/" + "x" * 2048, "/a/b$c"])
def test_ssm_parameter_name_refuses(s: str) -> None:
    text = refused(rules.ssm_parameter_name, s)
    assert "at most 15 levels and 2048 characters" in text


def test_ssm_limit_matches_botocore() -> None:
    assert botocore_shape("ssm", "PSParameterName")["max"] == rules.SSM_PARAMETER_NAME_MAX


@pytest.mark.parametrize("s", ["cr-0123456789abcdef0", "cr-0a1b2c3d4e5f60718", "cr-fffffffffffffffff"])
def test_capacity_reservation_id_accepts(s: str) -> None:
    assert rules.capacity_reservation_id(s) == s


@pytest.mark.parametrize("s", ["cr-0123456789ABCDEF0", "cr-01234567", "cr-0123456789abcdef0g", "r-0123456789abcdef0",
                               "cr-0123456789abcdefg", "cr-0123456789abcdef"])
def test_capacity_reservation_id_refuses(s: str) -> None:
    assert "'cr-' and 17 lower-case hex digits" in refused(rules.capacity_reservation_id, s)


def test_capacity_reservation_id_has_no_botocore_pattern() -> None:
    """The form is from the EC2 docs: botocore gives no constraint to compare with (if one appears, use it)."""
    assert "pattern" not in botocore_shape("ec2", "CapacityReservationId")


@pytest.mark.parametrize("s", ["ami-0123456789abcdef0", "ami-12345678", "ami-abcdef01"])
def test_ami_id_accepts(s: str) -> None:
    assert rules.ami_id(s) == s


@pytest.mark.parametrize("s", ["ami-12345", "ami-0123456789ABCDEF0", "ami-0123456789abcdef", "ami-123456789",
                               "ami_12345678"])
def test_ami_id_refuses(s: str) -> None:
    assert "'ami-' and 8 or 17 lower-case hex digits" in refused(rules.ami_id, s)


@pytest.mark.parametrize("s", ["arn:aws:resource-groups:us-east-2:333333333333:group/nf-prod-trn2u-blocks",
                               "arn:aws-cn:resource-groups:cn-north-1:333333333333:group/g",
                               "arn:aws:resource-groups:ap-south-2:333333333333:group/g/" + "a" * 26])
def test_resource_group_arn_accepts(s: str) -> None:
    assert rules.resource_group_arn(s) == s


@pytest.mark.parametrize("s", ["arn:aws:resource-groups:us-east-2:3333:group/g",
                               "arn:aws:resource-groups:us-east-7:333333333333:group/g",
                               "arn:aws:ec2:us-east-2:333333333333:group/g",
                               "arn:aws:resource-groups:us-east-2:333333333333:group/a b"])
def test_resource_group_arn_refuses(s: str) -> None:
    assert "arn:aws:resource-groups:<region>:<12-digit account>:group/<name>" in refused(rules.resource_group_arn, s)


def test_resource_group_arn_matches_botocore() -> None:
    meta = botocore_shape("resource-groups", "GroupArn")
    assert meta["pattern"] == rules.RESOURCE_GROUP_ARN_PATTERN and (meta["min"], meta["max"]) == (12, 1600)


# ------------------------------------------------------------------------------------- numbers, dates

@pytest.mark.parametrize("x", [0, 1.5, -3.0, 1e300, 2000])
def test_finite_accepts(x: float) -> None:
    assert rules.finite(x) == x


@pytest.mark.parametrize("x", [math.inf, -math.inf, math.nan, float("1e400")])
def test_finite_refuses(x: float) -> None:
    assert refused(rules.finite, x) == "a finite number (not .inf or .nan)"


@pytest.mark.parametrize("d", [date(2026, 11, 22), date(2026, 1, 1), date(1999, 12, 31)])
def test_not_in_future_accepts(d: date) -> None:
    assert rules.not_in_future(d, date(2026, 11, 22)) == d


@pytest.mark.parametrize("d", [date(2026, 11, 23), date(2027, 1, 1), date(2099, 1, 1)])
def test_not_in_future_refuses(d: date) -> None:
    assert refused(rules.not_in_future, d, date(2026, 11, 22)) == "a date on or before today (2026-11-22)"


def test_not_in_future_defaults_to_today() -> None:
    assert rules.not_in_future(date.today()) == date.today()
    assert "on or before today" in refused(rules.not_in_future, date(9999, 1, 1))


def test_rules_module_loads_without_aws_cdk_or_pydantic() -> None:
    import subprocess
    import sys

    code = ("import sys; import neuronfleet.core.rules, neuronfleet.fleetfile.yamlsafe; "
            "bad = [m for m in ('aws_cdk', 'jsii', 'botocore', 'moto', 'pydantic') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr

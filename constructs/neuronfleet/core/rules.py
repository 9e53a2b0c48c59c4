"""Pure validators for the values a fleet file (or a construct's caller) gives.

Each rule is ``rule(value) -> value``: it returns the value when it is valid and raises
``ValueError(allowed)`` when not, where ``allowed`` says only what is allowed (the caller prints
``"<field>: got <value>; allowed: <allowed>"``). They are meant as pydantic ``AfterValidator``s but import
neither pydantic nor aws-cdk-lib, so they load before Node.js/jsii starts. Rules that need context take it
as extra arguments (``availability_zone(az, region)``).

Every limit names its source and the date it was read (2026-11-22). Where botocore's service models carry the
constraint (min/max/pattern), the constant here is compared with botocore's shape in tests/unit/test_rules.py.
Facts that are lists (regions, AZs) ship as data in ``neuronfleet/facts/data`` (``scripts/refresh_data.py``; its
``--check`` mode fails when the installed botocore/moto disagree).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable
from datetime import date, datetime
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

NAME_RULE = "lower-case letters, digits and dashes, starting with a letter, at most 31 characters"


def name_rule(value: str) -> str:
    """A neuronfleet name (fleet, cluster, endpoint, scheduled action, workload)."""
    if not (1 <= len(value) <= 31 and value[0].isascii() and value[0].islower()
            and all(c.isascii() and (c.islower() or c.isdigit() or c == "-") for c in value)
            and not value.endswith("-") and "--" not in value):
        raise ValueError(NAME_RULE + " (no dash at the end, no double dash)")
    return value


# ------------------------------------------------------------------------------------------------ data


@cache
def _data(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files("neuronfleet.facts.data").joinpath(name).read_text())
    return data


def known_regions() -> tuple[str, ...]:
    """Every region of every partition in botocore's endpoints data (shipped as data/regions.json)."""
    return tuple(_data("regions.json")["regions"])


def known_availability_zones(region_name: str) -> tuple[str, ...]:
    """The AZ names AWS lists for ``region_name`` (data/availability_zones.json; empty if unknown)."""
    return tuple(_data("availability_zones.json")["availability_zones"].get(region_name, ()))


def _close(word: str, choices: tuple[str, ...] | list[str], n: int = 4) -> str:
    near = difflib.get_close_matches(word, choices, n=n, cutoff=0.6)
    return ", ".join(near)


def close_matches(word: str, choices: tuple[str, ...] | list[str], n: int = 4, cutoff: float = 0.6) -> str:
    """The ``choices`` closest to ``word`` (difflib's ratio >= ``cutoff``), comma-separated; "" when none is close:
    the kit's one "did you mean" helper (a fleet-file key uses 0.75: at 0.6 'vpc_id' would suggest 'cidr')."""
    return ", ".join(difflib.get_close_matches(word, choices, n=n, cutoff=cutoff))


# ------------------------------------------------------------------------------------------- schedules

SCHEDULE_ALLOWED = (
    "a schedule: cron(minutes hours day-of-month month day-of-week year) with six space-separated fields and "
    "exactly one of day-of-month/day-of-week '?' (e.g. cron(0 8 ? * MON-FRI *)), rate(N unit) with a whole N >= 1 "
    "and unit minute|minutes|hour|hours|day|days (singular exactly when N is 1), or at(yyyy-mm-ddThh:mm:ss)"
)

_MONTHS = {m: i for i, m in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV",
                                       "DEC"], start=1)}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}


class _CronField(NamedTuple):
    name: str
    low: int
    high: int
    names: dict[str, int]


_CRON_FIELDS = (
    _CronField("minutes", 0, 59, {}),
    _CronField("hours", 0, 23, {}),
    _CronField("day-of-month", 1, 31, {}),
    _CronField("month", 1, 12, _MONTHS),
    _CronField("day-of-week", 1, 7, _DAYS),
    _CronField("year", 1970, 2199, {}),
)


def _cron_value(text: str, field: _CronField) -> int:
    if text.upper() in field.names:
        return field.names[text.upper()]
    if not text.isdigit():
        raise ValueError
    value = int(text)
    if not field.low <= value <= field.high:
        raise ValueError
    return value


def _cron_range(text: str, field: _CronField) -> None:
    if text == "*":
        return
    low, sep, high = text.partition("-")
    first = _cron_value(low, field)
    if sep:
        last = _cron_value(high, field)
        if field.name == "year" and last < first:
            raise ValueError


def _cron_item(item: str, field: _CronField) -> None:
    """One comma-separated item of a field: *, n, a-b, */n, a/n, a-b/n, and L W # where AWS allows them."""
    if field.name == "day-of-month":
        if item in ("L", "LW"):
            return
        if item.endswith("W"):
            _cron_value(item[:-1], field)
            return
    if field.name == "day-of-week":
        if item == "L":
            return
        if item.endswith("L"):
            _cron_value(item[:-1], field)
            return
        if "#" in item:
            day, _, nth = item.partition("#")
            _cron_value(day, field)
            if not (nth.isdigit() and 1 <= int(nth) <= 5):
                raise ValueError
            return
    base, slash, step = item.partition("/")
    if slash and not (step.isdigit() and int(step) >= 1):
        raise ValueError
    _cron_range(base, field)


def _check_cron(body: str) -> None:
    fields = body.split(" ")
    if len(fields) != 6 or any(not f for f in fields):
        raise ValueError
    for text, field in zip(fields, _CRON_FIELDS, strict=True):
        if text == "?":
            if field.name not in ("day-of-month", "day-of-week"):
                raise ValueError
            continue
        for item in text.split(","):
            _cron_item(item, field)
    if (fields[2] == "?") == (fields[4] == "?"):
        raise ValueError


_RATE = re.compile(r"([1-9][0-9]{0,8}) (minute|minutes|hour|hours|day|days)")


def schedule_expression(expr: str) -> str:
    """An Application Auto Scaling / EventBridge schedule: ``cron(...)``, ``rate(...)`` or ``at(...)``.

    Sources (read 2026-11-22): Application Auto Scaling User Guide, "Schedule recurring scaling actions using
    Application Auto Scaling" (https://docs.aws.amazon.com/autoscaling/application/userguide/
    scheduled-scaling-using-cron-expressions.html: six fields [Minutes] [Hours] [Day_of_Month] [Month]
    [Day_of_Week] [Year]) and its cron reference, the EventBridge "Schedule expressions for rules" page
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html: field ranges,
    wildcards , - * ? / L W #, one of day-of-month/day-of-week must be ?, rate singular for 1), and
    PutScheduledAction in the Application Auto Scaling API reference (at(yyyy-mm-ddThh:mm:ss); botocore's
    ``ResourceIdMaxLen1600`` shape limits the expression to 1600 characters).
    """
    ok = False
    if isinstance(expr, str) and len(expr) <= 1600:
        try:
            if expr.startswith("cron(") and expr.endswith(")"):
                _check_cron(expr[5:-1])
                ok = True
            elif expr.startswith("rate(") and expr.endswith(")"):
                m = _RATE.fullmatch(expr[5:-1])
                ok = bool(m) and (m.group(1) == "1") == (not m.group(2).endswith("s"))  # type: ignore[union-attr]
            elif expr.startswith("at(") and expr.endswith(")") and len(expr) == 23:
                datetime.strptime(expr[3:-1], "%Y-%m-%dT%H:%M:%S")
                ok = True
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(SCHEDULE_ALLOWED)
    return expr


# ------------------------------------------------------------------------------------------------ tags

TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
_TAG_CHARS = re.compile(r"[\w\s.:/=+\-@]*")  # \w: Unicode letters, digits and _ (Python's re is Unicode-aware)
TAG_ALLOWED_CHARS = "Unicode letters, digits, spaces and _ . : / = + - @"


def _tag_chars_ok(text: str) -> bool:
    # \w also matches a few connector punctuation marks; close enough to AWS's \p{L}\p{Z}\p{N}_.:/=+\-@.
    return bool(_TAG_CHARS.fullmatch(text))


def tag_key(key: str) -> str:
    """A user tag key: 1-128 characters of letters, digits, spaces and ``_ . : / = + - @``; not ``aws:...``.

    Sources (read 2026-11-22): "Tag naming limits and requirements", Tagging AWS Resources
    (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html#tag-conventions) and the AWS Batch
    user guide's tag restrictions (https://docs.aws.amazon.com/batch/latest/userguide/tag-restrictions.html):
    key 1-128 Unicode characters, value 0-256, the characters above, the ``aws:`` prefix (any case) reserved.
    botocore's resourcegroupstaggingapi ``TagKey`` (1-128) and SageMaker ``TagKey`` pattern agree.
    """
    if (not isinstance(key, str) or not 1 <= len(key) <= TAG_KEY_MAX or not _tag_chars_ok(key)
            or key.lower().startswith("aws:")):
        raise ValueError(f"a tag key of 1 to {TAG_KEY_MAX} characters: {TAG_ALLOWED_CHARS}; "
                         "not starting with 'aws:' (reserved for AWS, in any case)")
    return key


def tag_value(value: str) -> str:
    """A user tag value: 0-256 characters of letters, digits, spaces and ``_ . : / = + - @``.

    Source: as :func:`tag_key` (read 2026-11-22); botocore ``TagValue`` max 256.
    """
    if not isinstance(value, str) or len(value) > TAG_VALUE_MAX or not _tag_chars_ok(value):
        raise ValueError(f"a tag value of at most {TAG_VALUE_MAX} characters: {TAG_ALLOWED_CHARS}")
    return value


# -------------------------------------------------------------------------------------- regions and AZs


def region(name: str) -> str:
    """A region that exists in botocore's endpoints data (``botocore/data/endpoints.json``, all partitions).

    Shipped as data/regions.json (scripts/refresh_data.py; read from botocore 1.44.5 on 2026-11-22).
    """
    regions = known_regions()
    if isinstance(name, str) and name in regions:
        return name
    near = _close(name, regions) if isinstance(name, str) else ""
    raise ValueError("an AWS region, e.g. " + (near or "us-east-1, us-east-2, us-west-2")
                     + f" ({len(regions)} known, from botocore's endpoints data)")


def availability_zone(az: str, region_name: str) -> str:
    """An AZ name AWS has in ``region_name``.

    Source: the per-AZ DescribeInstanceTypeOfferings data (location type availability-zone) and the zone
    table of ``moto/ec2/models/availability_zones_and_regions.py``, both AWS data as shipped in moto 5.2.5
    (read 2026-11-22), shipped as data/availability_zones.json by scripts/refresh_data.py. For a region
    that data does not cover, any ``<region><letter>`` is accepted.
    """
    zones = known_availability_zones(region_name)
    if zones:
        if az in zones:
            return az
        raise ValueError(f"an availability zone of {region_name}: {', '.join(zones)}")
    if isinstance(az, str) and re.fullmatch(re.escape(region_name) + r"[a-z]", az):
        return az
    raise ValueError(f"an availability zone of {region_name}, e.g. {region_name}a")


# ---------------------------------------------------------------------------------------------- e-mail

EMAIL_MAX = 254


def email(addr: str) -> str:
    """A plausible e-mail address: one @, no spaces, a dotted domain, at most 254 characters.

    Sources (read 2026-11-22): RFC 5321 section 4.5.3.1 (local part <= 64 octets; a path <= 256 octets, which
    leaves 254 for the address, RFC 3696 errata 1690) and RFC 1035 (labels of letters, digits and hyphens,
    1-63 characters). SNS e-mail subscriptions accept any such address.
    """
    ok = isinstance(addr, str) and len(addr) <= EMAIL_MAX and addr.count("@") == 1
    if ok:
        local, _, domain = addr.partition("@")
        labels = domain.split(".")
        ok = (0 < len(local) <= 64 and not re.search(r"\s", addr) and len(labels) >= 2
              and all(re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", label) for label in labels)
              and not labels[-1].isdigit())
    if not ok:
        raise ValueError(f"an e-mail address such as team@example.com: one @, no spaces, a domain with a dot, "
                         f"at most {EMAIL_MAX} characters")
    return addr


# -------------------------------------------------------------------------------------- resource names


ATHENA_MIN_BYTES_SCANNED_CUTOFF = 10_000_000
"""The smallest per-query data usage control of an Athena workgroup, in bytes (botocore 1.44.5 athena model:
WorkGroupConfiguration.BytesScannedCutoffPerQuery, min 10000000)."""


class NameLimit(NamedTuple):
    """The name a service accepts: at most ``max_length`` characters matching ``pattern`` (in full)."""

    max_length: int
    pattern: str
    source: str


RESOURCE_NAMES: dict[str, NameLimit] = {
    "cloudformation-stack": NameLimit(
        128, r"[A-Za-z][-A-Za-z0-9]*",
        "CloudFormation CreateStack StackName: 1-128, letters, digits and hyphens, starting with a letter "
        "(https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html; SageMaker's "
        "CfnStackDetail Name pattern [A-Za-z][A-Za-z0-9-]{0,127}), read 2026-11-22"),
    "sagemaker-endpoint": NameLimit(
        63, r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
        "botocore 1.44.5 SageMaker shape EndpointName (max 63, pattern [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}), "
        "read 2026-11-22"),
    "batch-job-queue": NameLimit(
        128, r"[A-Za-z0-9_-]+",
        "AWS Batch CreateJobQueue jobQueueName: up to 128 letters, numbers, hyphens and underscores "
        "(https://docs.aws.amazon.com/batch/latest/APIReference/API_CreateJobQueue.html), read 2026-11-22"),
    "batch-job-definition": NameLimit(
        128, r"[A-Za-z0-9_-]+",
        "botocore 1.44.5 batch RegisterJobDefinition jobDefinitionName: \"up to 128 letters long. It can contain "
        "uppercase and lowercase letters, numbers, hyphens (-), and underscores (_)\", read 2026-11-28"),
    "batch-compute-environment": NameLimit(
        128, r"[A-Za-z0-9_-]+",
        "AWS Batch CreateComputeEnvironment computeEnvironmentName: up to 128 letters, numbers, hyphens and "
        "underscores (https://docs.aws.amazon.com/batch/latest/APIReference/API_CreateComputeEnvironment.html), "
        "read 2026-11-22"),
    "sns-topic": NameLimit(
        256, r"[A-Za-z0-9_-]+",
        "SNS CreateTopic Name: 1-256 ASCII letters, numbers, underscores and hyphens "
        "(https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html), read 2026-11-22"),
    "budget": NameLimit(
        100, r"[^:\\]+",
        "botocore 1.44.5 Budgets shape BudgetName (1-100, no ':' or '\\'), read 2026-11-22"),
    "dynamodb-table": NameLimit(
        255, r"[a-zA-Z0-9_.-]{3,255}",
        "botocore 1.44.5 DynamoDB shape TableName (3-255, [a-zA-Z0-9_.-]+), read 2026-11-22"),
}
"""kind -> (max_length, pattern, source) of the names neuronfleet derives from fleet and entry names."""

_NAME_WORDS = {
    "cloudformation-stack": "letters, digits and hyphens, starting with a letter",
    "sagemaker-endpoint": "letters and digits, single or repeated hyphens between them",
    "batch-job-queue": "letters, digits, hyphens and underscores",
    "batch-job-definition": "letters, digits, hyphens and underscores",
    "batch-compute-environment": "letters, digits, hyphens and underscores",
    "sns-topic": "ASCII letters, digits, hyphens and underscores",
    "budget": "any characters except ':' and '\\'",
    "dynamodb-table": "at least 3 letters, digits, '_', '.' or '-'",
}


CLOUDFORMATION_QUOTAS = {"resources": 500, "template_bytes": 1_000_000, "description_bytes": 1024}
"""Per stack: resources, template body from S3 (bytes), template description (bytes). CloudFormation user guide,
"Understand CloudFormation quotas" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/
cloudformation-limits.html, read 2026-11-22). CDK uploads every template to S3, so the S3 body limit applies."""
BATCH_MNP_MAX_NODES = 1000
"""Nodes in one AWS Batch multi-node parallel job: "You can have up to 1,000 nodes in a single job. This is the default
limit for instances in an Amazon ECS cluster. You can request to increase this limit." (AWS Batch User Guide, "Node
groups", https://docs.aws.amazon.com/batch/latest/userguide/mnp-node-groups.html, read 2026-11-22). The ECS guide now
gives 5,000 instances per cluster (below), so the 1,000 may be stale; nothing else publishes Batch's own figure: the
kit refuses more unless a cluster declares a raised limit (``max_job_nodes``)."""
ECS_MAX_INSTANCES_PER_CLUSTER = 5000
"""EC2 instances one ECS cluster can register; a Batch compute environment is one ECS cluster, so one training
cluster's instances. "the maximum number of Amazon EC2 instances that you can register for each cluster is 5,000"
(Amazon ECS Developer Guide, "Handle Amazon ECS service quotas and API throttling limits",
https://docs.aws.amazon.com/AmazonECS/latest/developerguide/operating-at-scale-service-quotas.html, read 2026-11-22)."""
IAM_ROLE_INLINE_POLICY_CHARS = 10240
"""The inline policies of one IAM role together (CDK writes a role's grants as AWS::IAM::Policy resources, which are
inline policies): IAM refuses more with "Maximum policy size of 10240 bytes exceeded for role ..." (LimitExceeded,
HTTP 409), IAM's own message as reported against aws/aws-cdk (issue 12403) and many other tools; IAM's quotas page
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html) gives the figure, counted without
whitespace. Its text was not read here, only IAM's message: read 2026-11-22."""
LAMBDA_ENVIRONMENT_BYTES = 4096
"""The total size of a function's environment variables (keys and values). AWS Lambda quotas
(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html, read 2026-11-22; cfn-lint's E3697)."""
EC2_USER_DATA_BYTES = 16_384
"""An instance's or launch template's user data, raw (before base64): "User data is limited to 16 KB" (botocore
1.44.5 ec2 RequestLaunchTemplateData.UserData, pinned by a test); "in raw form, before it is base64-encoded" (EC2
User Guide, Work with instance user data, read 2026-11-26). AWS Batch merges a MIME part of its own into a launch
template's user data (Batch User Guide, Amazon EC2 user data in launch templates); its size is not published."""
EVENT_PATTERN_CHARS = 4096
"""The longest EventBridge event pattern PutRule takes (botocore 1.44.5 events/2015-10-07 service-2.json, shape
EventPattern, max 4096; read 2026-11-23, pinned by a test)."""
TOKEN_ESTIMATE_CHARS = 64
"""What a reference (Ref, GetAtt, ImportValue) in a template value is taken to deploy as when sizes are estimated
at synth and :data:`REFERENCE_CHARS` does not know what it refers to: a physical name of up to 63 characters (a
SageMaker endpoint's, for one); ARNs can be longer."""

# What CloudFormation puts where a template holds a reference is not known at synth: the sizes checked at synth
# (Lambda environments, inline policies) take each reference as the longest value AWS allows there, so a template
# that passes never outgrows a quota whatever names CloudFormation generates. Read 2026-11-26.
LONGEST_PARTITION = 10
"""``aws-us-gov``, the longest partition id in botocore 1.44.5's data/partitions.json (pinned by a test)."""
LONGEST_REGION = 17
"""``aws-us-gov-global``, the longest region name in the same file (a pseudo-region: the real ones are shorter)."""
LONGEST_URL_SUFFIX = 16
"""``amazonaws.com.cn``, the longest DNS suffix of a partition in the same file (AWS::URLSuffix)."""


def longest_arn(service: str, resource: str, longest_name: int, *, regional: bool = True,
                account: bool = True) -> int:
    """Characters of the longest ARN ``arn:<partition>:<service>:<region>:<account>:<resource><name>``."""
    return len(f"arn:{'p' * LONGEST_PARTITION}:{service}:{'r' * LONGEST_REGION if regional else ''}:"
               f"{'0' * 12 if account else ''}:{resource}") + longest_name


REFERENCE_CHARS: dict[tuple[str, str], int] = {
    ("AWS::SNS::Topic", "Ref"): longest_arn("sns", "", 256),
    ("AWS::SNS::Topic", "TopicArn"): longest_arn("sns", "", 256),
    ("AWS::SNS::Topic", "TopicName"): 256,
    ("AWS::SQS::Queue", "Arn"): longest_arn("sqs", "", 80),
    ("AWS::SQS::Queue", "QueueName"): 80,
    ("AWS::SQS::Queue", "Ref"): len(f"https://sqs.{'r' * LONGEST_REGION}.{'s' * LONGEST_URL_SUFFIX}/{'0' * 12}/") + 80,
    ("AWS::SQS::Queue", "QueueUrl"): len(f"https://sqs.{'r' * LONGEST_REGION}.{'s' * LONGEST_URL_SUFFIX}/{'0' * 12}/")
    + 80,
    ("AWS::DynamoDB::Table", "Ref"): 255,
    ("AWS::DynamoDB::Table", "Arn"): longest_arn("dynamodb", "table/", 255),
    ("AWS::S3::Bucket", "Ref"): 63,
    ("AWS::S3::Bucket", "Arn"): longest_arn("s3", "", 63, regional=False, account=False),
    ("AWS::KMS::Key", "Ref"): 36,
    ("AWS::KMS::Key", "KeyId"): 36,
    ("AWS::KMS::Key", "Arn"): longest_arn("kms", "key/", 36),
    ("AWS::Logs::LogGroup", "Ref"): 512,
    ("AWS::Logs::LogGroup", "Arn"): longest_arn("logs", "log-group:", 512) + len(":*"),
    ("AWS::Batch::JobQueue", "Ref"): longest_arn("batch", "job-queue/", 128),
    ("AWS::Batch::JobQueue", "JobQueueArn"): longest_arn("batch", "job-queue/", 128),
    ("AWS::CloudWatch::Alarm", "Ref"): 255,
    ("AWS::CloudWatch::Alarm", "Arn"): longest_arn("cloudwatch", "alarm:", 255),
    ("AWS::Lambda::Function", "Ref"): 64,
    ("AWS::Lambda::Function", "Arn"): longest_arn("lambda", "function:", 64),
    ("AWS::IAM::Role", "Ref"): 64,
    ("AWS::IAM::Role", "Arn"): longest_arn("iam", "role", 512 + 64, regional=False),
    ("AWS::Partition", "Ref"): LONGEST_PARTITION,
    ("AWS::Region", "Ref"): LONGEST_REGION,
    ("AWS::AccountId", "Ref"): 12,
    ("AWS::URLSuffix", "Ref"): LONGEST_URL_SUFFIX,
}
"""(resource type or pseudo parameter, ``Ref`` or the Fn::GetAtt attribute) -> the longest value CloudFormation can
put there, for the references the kit's templates hold in environments and policies. Names: an SNS topic 1-256
characters (botocore 1.44.5 sns CreateTopic Name), an SQS queue up to 80 (sqs CreateQueue QueueName), a DynamoDB
table at most 255 (dynamodb shape TableName), a bucket 3-63 (Amazon S3 User Guide, general purpose bucket naming
rules, https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html), a KMS key id a 36-character
UUID or mrk- and 32 hex digits (kms KeyIdType's documentation), a log group at most 512 (logs shape LogGroupName), a
Batch job queue "up to 128 letters" (batch CreateJobQueue jobQueueName), an alarm at most 255 (cloudwatch shape
AlarmName), a function 1-64 (lambda CreateFunction FunctionName's documentation), a role 64 and its path 512 (iam
shapes roleNameType, pathType); what Ref and Fn::GetAtt return per type: the CloudFormation template reference's
"Return values" of each type (an SQS queue's Ref is its URL, a topic's its ARN, a table's and a bucket's their
names). Pinned against botocore by tests/unit/test_reference_sizes.py. Anything else is
:data:`TOKEN_ESTIMATE_CHARS`."""
CDK_DESCRIPTION_CHARS = 512
"""aws-cdk-lib 2.275.0 refuses a stack description longer than 512 characters (core/lib/stack.js:
``props.description.length>512``, with a message that says 1024 bytes), stricter than CloudFormation for ASCII."""


def fits_description(text: str) -> bool:
    """Whether ``text`` is a stack description both CloudFormation and aws-cdk-lib take."""
    return len(text) <= CDK_DESCRIPTION_CHARS and len(text.encode()) <= CLOUDFORMATION_QUOTAS["description_bytes"]


def check_resource_name(kind: str, name: str) -> str:
    """``name`` as the final name of a resource of ``kind`` (a key of :data:`RESOURCE_NAMES`)."""
    limit = RESOURCE_NAMES[kind]
    if not isinstance(name, str) or len(name) > limit.max_length or not re.fullmatch(limit.pattern, name):
        raise ValueError(f"a {kind} name of at most {limit.max_length} characters: {_NAME_WORDS[kind]}")
    return name


def resource_name(kind: str) -> Callable[[str], str]:
    """A rule for the final name of a ``kind`` resource (``RESOURCE_NAMES``), e.g. as an AfterValidator."""
    if kind not in RESOURCE_NAMES:
        raise KeyError(f"unknown resource kind {kind!r}; known: {', '.join(RESOURCE_NAMES)}")

    def rule(name: str) -> str:
        return check_resource_name(kind, name)

    rule.__name__ = f"resource_name_{kind.replace('-', '_')}"
    return rule


# ---------------------------------------------------------------------------------- identifiers, URIs

HF_PART_MAX = 96
_HF_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?")


def huggingface_model_id(s: str) -> str:
    """A Hugging Face Hub model id ``org/name``.

    Source (read 2026-11-22): huggingface_hub ``utils/_validators.py`` ``validate_repo_id`` and
    ``REPO_ID_REGEX`` (github.com/huggingface/huggingface_hub): letters, digits, ``-``, ``_``, ``.``; not
    starting or ending with ``-`` or ``.``; no ``--`` or ``..``; not ending in ``.git``; at most 96 characters
    for the name. neuronfleet also requires the namespace (``org/``) and applies 96 to it.
    """
    parts = s.split("/") if isinstance(s, str) else []
    ok = (len(parts) == 2 and all(len(p) <= HF_PART_MAX and _HF_PART.fullmatch(p) for p in parts)
          and "--" not in s and ".." not in s and not s.endswith(".git"))
    if not ok:
        raise ValueError(f"a Hugging Face model id org/name (e.g. meta-llama/Llama-3.2-1B-Instruct): each part "
                         f"1 to {HF_PART_MAX} letters, digits, '-', '_' or '.', not starting or ending with '-' or "
                         "'.', no '--' or '..', no spaces")
    return s


_HF_COMMIT = re.compile(r"[0-9a-f]{40}")


def huggingface_revision(s: str) -> str:
    """A commit of a Hugging Face Hub model repository: 40 lower-case hex digits (a branch or tag moves, a commit
    does not). The hub's snapshots are named by commit (``models--org--name/snapshots/<sha>``)."""
    if not isinstance(s, str) or not _HF_COMMIT.fullmatch(s):
        raise ValueError("a commit sha of the model repository: 40 lower-case hex digits (e.g. "
                         "5a8abab4a5d6f164389b1079fb721cfab8d7126c), not a branch or tag, which move; find it on the "
                         "model's 'Files and versions' history page or with huggingface_hub's HfApi().model_info(id).sha")
    return s


SECRET_NAME_MAX = 512
"""Secrets Manager's secret name: 1-512 characters, ASCII letters, digits and /_+=.@- (botocore secretsmanager
NameType and CreateSecret Name, 1.44.5); its ARN ends in the name, a hyphen and six random characters."""
_SECRET_ARN = re.compile(r"arn:aws(?:-[a-z]+)*:secretsmanager:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:secret:"
                         r"(?P<name>[A-Za-z0-9/_+=.@-]+)-[A-Za-z0-9]{6}")


def secret_arn(s: str) -> str:
    """The complete ARN of a Secrets Manager secret (with the six characters Secrets Manager appends): IAM grants
    name exactly that secret."""
    m = _SECRET_ARN.fullmatch(s) if isinstance(s, str) else None
    if not m or len(m["name"]) > SECRET_NAME_MAX:
        raise ValueError("the complete ARN of a Secrets Manager secret, arn:aws:secretsmanager:<region>:<account>:"
                         "secret:<name>-<6 characters> (as the console and DescribeSecret show it)")
    return s


_S3_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def s3_uri(s: str) -> str:
    """``s3://bucket/key`` with a valid general-purpose bucket name and a non-empty key of at most 1024 bytes.

    Source (read 2026-11-22): Amazon S3 User Guide, "General purpose bucket naming rules"
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html: 3-63 characters, lower-case
    letters, digits, dots and hyphens, starting and ending with a letter or digit, no '..', not an IP address,
    not starting with xn-- / sthree- / amzn-s3-demo-, not ending with -s3alias / --ol-s3 / .mrap / --x-s3 /
    --table-s3) and "Naming Amazon S3 objects" (keys up to 1024 bytes of UTF-8).

    The key may not hold ``*``, ``?`` or ``${``: the kit writes the URI into IAM policies' resources, where ``*`` and
    ``?`` are wildcards ("You can use wildcard characters (* and ?) within the individual segments of an ARN": IAM
    User Guide, https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html, read
    2026-11-28) and ``${...}`` a policy variable (IAM User Guide, "Policy variables"), so such a key would grant more
    than the one object or prefix named (issue 36, finding 8).
    S3 allows those characters in keys; the kit refuses them.
    """
    if isinstance(s, str) and s.startswith("s3://") and any(c in s[5:] for c in ("*", "?", "${")):
        raise ValueError("an S3 URI s3://bucket/key without '*', '?' or '${' (in an IAM policy's resource they are "
                         "wildcards or a policy variable, granting more than the object named)")
    ok = isinstance(s, str) and s.startswith("s3://")
    if ok:
        bucket, slash, key = s[5:].partition("/")
        ok = (bool(slash) and 0 < len(key.encode()) <= 1024 and bool(_S3_BUCKET.fullmatch(bucket))
              and ".." not in bucket and ".-" not in bucket and "-." not in bucket
              and not re.fullmatch(r"\d+\.\d+\.\d+\.\d+", bucket)
              and not bucket.startswith(("xn--", "sthree-", "amzn-s3-demo-"))
              and not bucket.endswith(("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")))
    if not ok:
        raise ValueError("an S3 URI s3://bucket/key: a bucket name of 3 to 63 lower-case letters, digits, dots "
                         "and hyphens (starting and ending with a letter or digit) and a non-empty key")
    return s


ECR_REPOSITORY_PATTERN = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*"
"""botocore 1.44.5 ECR shape RepositoryName (2-256), read 2026-11-22."""
ECR_TAG_MAX = 300
"""botocore 1.44.5 ECR shape ImageTag (1-300)."""
_ECR_URI = re.compile(
    r"(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repo>[^:@]+)(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]*)|@sha256:[0-9a-f]{64})?"
)


def ecr_image_uri(s: str) -> str:
    """``<account>.dkr.ecr.<region>.amazonaws.com/<repository>[:tag|@sha256:<digest>]``.

    Sources (read 2026-11-22): Amazon ECR User Guide, "Pulling an image"
    (https://docs.aws.amazon.com/AmazonECR/latest/userguide/docker-pull-ecr-image.html: registry URI form,
    tag or sha256 digest); botocore 1.44.5 ECR shapes RepositoryName (2-256, :data:`ECR_REPOSITORY_PATTERN`)
    and ImageTag (1-300); the region must exist (:func:`region`).
    """
    m = _ECR_URI.fullmatch(s) if isinstance(s, str) else None
    ok = (m is not None and m.group("region") in known_regions()
          and 2 <= len(m.group("repo")) <= 256 and re.fullmatch(ECR_REPOSITORY_PATTERN, m.group("repo")) is not None
          and (m.group("tag") is None or len(m.group("tag")) <= ECR_TAG_MAX))
    if not ok:
        raise ValueError("an ECR image URI <12-digit account>.dkr.ecr.<region>.amazonaws.com/<repository> with an "
                         "optional :tag or @sha256:<64 hex digits>, in an existing region")
    return s


_REPO_TAG = re.compile(r"(?P<repo>[^:@]+):(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]*)")


def container_image(s: str) -> str:
    """A container image: an ECR image URI (:func:`ecr_image_uri`), ``public.ecr.aws/<alias>/<repo>[:tag]``,
    or a Deep Learning Container ``repository:tag`` (e.g. a Neuron DLC, resolved to AWS's DLC registry).

    Sources (read 2026-11-22): as :func:`ecr_image_uri` (repository pattern and tag length from botocore's ECR
    shapes); Amazon ECR Public User Guide, "Pulling an image" (public.ecr.aws/<registry alias>/<repository>).
    """
    if isinstance(s, str):
        if s.startswith("public.ecr.aws/"):
            rest = s.removeprefix("public.ecr.aws/")
            m = _REPO_TAG.fullmatch(rest)
            repo, tag = (m.group("repo"), m.group("tag")) if m else (rest, None)
            if repo.count("/") >= 1 and re.fullmatch(ECR_REPOSITORY_PATTERN, repo) and len(tag or "") <= ECR_TAG_MAX:
                return s
        elif ".dkr.ecr" in s:
            try:
                return ecr_image_uri(s)
            except ValueError:
                pass
        else:
            m = _REPO_TAG.fullmatch(s)
            if (m and 2 <= len(m.group("repo")) <= 256 and re.fullmatch(ECR_REPOSITORY_PATTERN, m.group("repo"))
                    and len(m.group("tag")) <= ECR_TAG_MAX):
                return s
    raise ValueError("a container image: an ECR URI <account>.dkr.ecr.<region>.amazonaws.com/<repository>[:tag|"
                     "@sha256:<digest>], public.ecr.aws/<alias>/<repository>[:tag], or a Deep Learning Container "
                     "repository:tag such as pytorch-training-neuronx:2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04")


SSM_PARAMETER_NAME_MAX = 2048
"""botocore 1.44.5 SSM shape PSParameterName (1-2048), read 2026-11-22."""
SSM_PARAMETER_MAX_DEPTH = 15


def ssm_parameter_name(s: str) -> str:
    """An SSM Parameter Store name to read: ``a-zA-Z0-9_.-`` and ``/`` between levels, at most 15 levels.

    Sources (read 2026-11-22): botocore 1.44.5 SSM shape PSParameterName (1-2048) and the PutParameter Name
    naming constraints (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html:
    characters a-zA-Z0-9_.-, '/' delineates hierarchies with a leading '/', no spaces, at most fifteen levels).
    The "no aws/ssm prefix" constraint applies to parameters you create; public parameters such as
    ``/aws/service/neuron/...`` are read, so it is not applied here.
    """
    ok = isinstance(s, str) and 1 <= len(s) <= SSM_PARAMETER_NAME_MAX
    if ok:
        levels = s.removeprefix("/").split("/")
        ok = (len(levels) <= SSM_PARAMETER_MAX_DEPTH and all(re.fullmatch(r"[A-Za-z0-9_.-]+", p) for p in levels)
              and ("/" not in s or s.startswith("/")))
    if not ok:
        raise ValueError(f"an SSM parameter name such as /aws/service/neuron/...: letters, digits, '_', '.', '-', "
                         f"levels separated by '/' after a leading '/', at most {SSM_PARAMETER_MAX_DEPTH} levels and "
                         f"{SSM_PARAMETER_NAME_MAX} characters")
    return s


def capacity_reservation_id(s: str) -> str:
    """``cr-`` and 17 lower-case hex digits.

    Sources (read 2026-11-22): botocore 1.44.5 EC2 shape CapacityReservationId has no constraint; the form
    comes from the EC2 API reference (CapacityReservation: ``cr-1234567890abcdef0``) and the EC2 user guide's
    "Resource IDs" (longer IDs: 17 characters after the prefix, the only form since 2018, when On-Demand
    Capacity Reservations were introduced).
    """
    if not isinstance(s, str) or not re.fullmatch(r"cr-[0-9a-f]{17}", s):
        raise ValueError("a capacity reservation id: 'cr-' and 17 lower-case hex digits, e.g. cr-0123456789abcdef0")
    return s


def ami_id(s: str) -> str:
    """``ami-`` and 8 or 17 lower-case hex digits.

    Source (read 2026-11-22): EC2 user guide, "Resource IDs" (short 8-character and long 17-character IDs;
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html).
    """
    if not isinstance(s, str) or not re.fullmatch(r"ami-(?:[0-9a-f]{8}|[0-9a-f]{17})", s):
        raise ValueError("an AMI id: 'ami-' and 8 or 17 lower-case hex digits, e.g. ami-0123456789abcdef0")
    return s


RESOURCE_GROUP_ARN_PATTERN = (r"arn:aws(-[a-z]+)*:resource-groups:[a-z]{2}(-[a-z]+)+-\d{1}:[0-9]{12}:"
                              r"group/([a-zA-Z0-9_\.-]{1,300}|[a-zA-Z0-9_\.-]{1,150}/[a-z0-9]{26})")
"""botocore 1.44.5 resource-groups shape GroupArn (12-1600), read 2026-11-22."""


def resource_group_arn(s: str) -> str:
    """A resource group ARN (botocore's GroupArn pattern) in an existing region.

    Source: botocore 1.44.5 resource-groups service model, shape GroupArn (read 2026-11-22).
    """
    ok = isinstance(s, str) and 12 <= len(s) <= 1600 and re.fullmatch(RESOURCE_GROUP_ARN_PATTERN, s) is not None
    if ok and s.split(":")[3] not in known_regions():
        ok = False
    if not ok:
        raise ValueError("a resource group ARN arn:aws:resource-groups:<region>:<12-digit account>:group/<name> "
                         "(name: letters, digits, '_', '.', '-'), in an existing region")
    return s


# ------------------------------------------------------------------------------------- numbers, dates


def finite(x: float) -> float:
    """A finite number: YAML's ``.inf``/``.nan`` reach pydantic as float('inf')/float('nan')."""
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError("a finite number (not .inf or .nan)")
    return x


def not_in_future(d: date, today: date | None = None) -> date:
    """A date not after ``today`` (default: the local date), e.g. the ``as_of`` date of a price."""
    today = today or date.today()
    if d > today:
        raise ValueError(f"a date on or before today ({today.isoformat()})")
    return d


def account_id(s: str) -> str:
    """An AWS account id: exactly 12 digits (IAM user guide, "Your AWS account ID"; read 2026-11-22)."""
    if not (len(s) == 12 and s.isascii() and s.isdigit()):
        raise ValueError("an AWS account id: exactly 12 digits, e.g. 111111111111")
    return s

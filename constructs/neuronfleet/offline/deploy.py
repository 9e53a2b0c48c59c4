"""deploy_assembly: every stack of a cloud assembly, dependencies first, through moto's CloudFormation API."""

from __future__ import annotations

import io
import json
import logging
import os
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuronfleet.offline.moto_patches import (
    DEFAULT_REGION,
    moto_active,
    sagemaker_instance_types_from_botocore,
    sagemaker_names_from_template,
)
from neuronfleet.offline.standins import prepare_template, sagemaker_types_note

BOOTSTRAP_VERSION = "30"
"""The CDK bootstrap version stood in (templates check for at least the version they need)."""

_QUIETED_LOGGERS = ("moto", "botocore", "boto3", "urllib3")


@dataclass
class StackResult:
    name: str
    status: str
    """CREATE_COMPLETE, CREATE_FAILED, or NOT_CREATED (a stack it depends on failed)."""
    reason: str
    account: str
    region: str
    """Where the stack went: its own environment, or for an environment-agnostic stack the one chosen."""
    resources: dict[str, int] = field(default_factory=dict)
    """Created resource count by type (what moto keeps)."""
    skipped: list[str] = field(default_factory=list)
    """Resource types moto's CloudFormation does not implement (template tests cover them)."""
    placeholders: list[str] = field(default_factory=list)
    """``Logical.Attribute`` references to skipped resources, replaced by a placeholder."""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class DeployResult:
    stacks: list[StackResult] = field(default_factory=list)
    stand_ins: list[str] = field(default_factory=list)
    """Every gap in moto stood in for, once each: what moto does differently and what was done about it."""
    warnings: list[str] = field(default_factory=list)
    """Warnings and moto/botocore log messages raised during the deploy (deduplicated), instead of printed."""

    @property
    def ok(self) -> bool:
        return all(s.status == "CREATE_COMPLETE" for s in self.stacks)

    def resource_count(self) -> int:
        return sum(sum(s.resources.values()) for s in self.stacks)

    def stand_in(self, text: str) -> None:
        if text not in self.stand_ins:
            self.stand_ins.append(text)


@dataclass
class _Stack:
    id: str
    name: str
    root: Path
    artifact: dict[str, Any]
    asset_manifests: list[Path]
    account: str = ""
    region: str = ""


def deploy_assembly(assembly_dir: str | Path, *, account: str | None = None, region: str | None = None,
                    only: list[str] | None = None) -> DeployResult:
    """Create every stack of the assembly (dependencies first) through moto's CloudFormation API.

    Call inside ``offline_aws(...)`` (or ``moto.mock_aws()``). A stack synthesised for an environment goes
    into its own account and region; an environment-agnostic one into ``account`` (default: the account moto
    serves) and ``region`` (default: AWS_DEFAULT_REGION, else us-east-1), as ``cdk deploy`` would. moto
    serves one account (MOTO_ACCOUNT_ID): a stack for another account is refused with a ValueError before
    anything is created. ``only`` selects stacks by name. Warnings and moto's log messages are collected in
    ``result.warnings``, not printed.
    """
    if not moto_active():
        raise RuntimeError("deploy_assembly creates stacks through boto3: call it inside "
                           "neuronfleet.offline.offline_aws() or moto.mock_aws(), never against a real account")
    stacks = _stacks(Path(assembly_dir))
    if only is not None:
        unknown = sorted(set(only) - {s.name for s in stacks})
        if unknown:
            raise ValueError(f"only={only!r}: no stack named {', '.join(unknown)} in {assembly_dir}; "
                             f"its stacks: {', '.join(s.name for s in stacks)}")
        stacks = [s for s in stacks if s.name in only]
    result = DeployResult()
    extended: list[str] = []  # SageMaker instance types only botocore's list let through
    with _captured(result), sagemaker_names_from_template(), \
            sagemaker_instance_types_from_botocore(on_extended=extended.append):
        _choose_environments(stacks, account, region)
        ids = {s.id for s in stacks}
        failed: set[str] = set()
        for stack in _order(stacks):
            deps = [d for d in stack.artifact.get("dependencies", []) if d in ids]
            if any(d in failed for d in deps):
                failed.add(stack.id)
                result.stacks.append(StackResult(
                    name=stack.name, status="NOT_CREATED", account=stack.account, region=stack.region,
                    reason=f"not created: it depends on {', '.join(d for d in deps if d in failed)}, which failed"))
                continue
            outcome = _deploy_stack(stack, result)
            result.stacks.append(outcome)
            if outcome.status != "CREATE_COMPLETE":
                failed.add(stack.id)
    if extended:
        result.stand_in(sagemaker_types_note(extended))
    return result


def _stacks(root: Path) -> list[_Stack]:
    """The assembly's stacks, also those of nested assemblies (CDK Stages)."""
    found = []
    artifacts = json.loads((root / "manifest.json").read_text())["artifacts"]
    for art_id, art in artifacts.items():
        if art["type"] == "aws:cloudformation:stack":
            assets = [root / artifacts[d]["properties"]["file"] for d in art.get("dependencies", [])
                      if artifacts.get(d, {}).get("type") == "cdk:asset-manifest"]
            found.append(_Stack(id=art_id, name=art["properties"].get("stackName", art_id), root=root, artifact=art,
                                asset_manifests=assets))
        elif art["type"] == "cdk:cloud-assembly":
            found += _stacks(root / art["properties"]["directoryName"])
    return found


def _choose_environments(stacks: list[_Stack], account: str | None, region: str | None) -> None:
    import boto3

    serving = boto3.client("sts", region_name=DEFAULT_REGION).get_caller_identity()["Account"]
    for stack in stacks:
        env = stack.artifact.get("environment", "aws://unknown-account/unknown-region")
        env_account, env_region = env.removeprefix("aws://").split("/", 1)
        agnostic = env_account == "unknown-account"
        stack.account = (account or serving) if agnostic else env_account
        stack.region = ((region or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION)
                        if env_region == "unknown-region" else env_region)
        if stack.account != serving:
            given = "was given account=" + repr(account) if agnostic else f"was synthesised for {env}"
            raise ValueError(
                f"stack {stack.name} {given}, but moto is serving account {serving} (MOTO_ACCOUNT_ID): deploy it "
                f"inside neuronfleet.offline.offline_aws(account={stack.account!r}) or set "
                f"MOTO_ACCOUNT_ID={stack.account} before moto.mock_aws(). moto serves one account at a time; "
                f"deploy the stacks of another account with only=[...] in a second offline_aws().")


def _order(stacks: list[_Stack]) -> list[_Stack]:
    by_id = {s.id: s for s in stacks}
    ordered: dict[str, _Stack] = {}

    def visit(stack: _Stack) -> None:
        if stack.id in ordered:
            return
        for dep in stack.artifact.get("dependencies", []):
            if dep in by_id:
                visit(by_id[dep])
        ordered[stack.id] = stack

    for s in stacks:
        visit(s)
    return list(ordered.values())


def _deploy_stack(stack: _Stack, result: DeployResult) -> StackResult:
    import boto3

    props = stack.artifact["properties"]
    template = json.loads((stack.root / props["templateFile"]).read_text())
    _bootstrap(stack, template, result)
    prepared = prepare_template(template, region=stack.region, note=result.stand_in)

    cfn = boto3.client("cloudformation", region_name=stack.region)
    try:
        cfn.create_stack(StackName=stack.name, TemplateBody=json.dumps(template),
                         Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"])
        desc = cfn.describe_stacks(StackName=stack.name)["Stacks"][0]
        status, reason = desc["StackStatus"], desc.get("StackStatusReason", "")
    except Exception as exc:
        status, reason, desc = "CREATE_FAILED", f"{type(exc).__name__}: {exc}", {}
    counts: dict[str, int] = {}
    if status == "CREATE_COMPLETE":
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack.name):
            for r in page["StackResourceSummaries"]:
                if r["ResourceType"]:  # moto lists each skipped resource as a blank entry
                    counts[r["ResourceType"]] = counts.get(r["ResourceType"], 0) + 1
    return StackResult(name=stack.name, status=status, reason=reason, account=stack.account, region=stack.region,
                       resources=counts, skipped=prepared.skipped, placeholders=prepared.placeholders,
                       outputs={o["OutputKey"]: o["OutputValue"] for o in desc.get("Outputs", [])})


def _substitute(text: str, account: str, region: str) -> str:
    return text.replace("${AWS::AccountId}", account).replace("${AWS::Region}", region) \
        .replace("${AWS::Partition}", "aws")


def _bootstrap(stack: _Stack, template: dict[str, Any], result: DeployResult) -> None:
    """What `cdk bootstrap` would have created: the version parameter and the asset buckets, with the assets."""
    import boto3

    props = stack.artifact["properties"]
    parameter = props.get("bootstrapStackVersionSsmParameter") or \
        template.get("Parameters", {}).get("BootstrapVersion", {}).get("Default")
    if parameter:
        ssm = boto3.client("ssm", region_name=stack.region)
        try:
            ssm.get_parameter(Name=parameter)
        except ssm.exceptions.ParameterNotFound:
            ssm.put_parameter(Name=parameter, Value=BOOTSTRAP_VERSION, Type="String")
            result.stand_in(f"CDK bootstrap ({stack.account}/{stack.region}): SSM {parameter}={BOOTSTRAP_VERSION}")
    for asset_manifest in stack.asset_manifests:
        _publish_assets(stack, asset_manifest, result)


def _publish_assets(stack: _Stack, asset_manifest: Path, result: DeployResult) -> None:
    import boto3

    assets = json.loads(asset_manifest.read_text())
    for asset in assets.get("files", {}).values():
        source = stack.root / asset["source"]["path"]
        if asset["source"].get("packaging") == "zip":
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for path in sorted(p for p in source.rglob("*") if p.is_file()):
                    zf.write(path, path.relative_to(source).as_posix())
            body = buf.getvalue()
        else:
            body = source.read_bytes()
        for dest in asset["destinations"].values():
            region = _substitute(dest.get("region", stack.region), stack.account, stack.region)
            bucket = _substitute(dest["bucketName"], stack.account, stack.region)
            s3 = boto3.client("s3", region_name=region)
            if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
                kwargs: dict[str, Any] = {} if region == "us-east-1" else {
                    "CreateBucketConfiguration": {"LocationConstraint": region}}
                s3.create_bucket(Bucket=bucket, **kwargs)
                result.stand_in(f"CDK bootstrap ({stack.account}/{region}): asset bucket {bucket}")
            s3.put_object(Bucket=bucket, Key=_substitute(dest["objectKey"], stack.account, region), Body=body)
    for name in assets.get("dockerImages", {}):
        result.stand_in(f"CDK assets: Docker image asset {name} not built or pushed (moto runs no Docker)")


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(f"{record.name} {record.levelname}: {record.getMessage()}")


@contextmanager
def _captured(result: DeployResult) -> Iterator[None]:
    """Warnings and moto/botocore log messages (WARNING and up) go to ``result.warnings``, deduplicated."""
    raw: list[str] = []
    handler = _Collect(raw)
    saved = {name: (logging.getLogger(name).level, logging.getLogger(name).propagate) for name in _QUIETED_LOGGERS}
    try:
        with ExitStack() as stack:
            caught = stack.enter_context(warnings.catch_warnings(record=True))
            warnings.simplefilter("always")
            for name in _QUIETED_LOGGERS:
                logger = logging.getLogger(name)
                logger.addHandler(handler)
                logger.setLevel(logging.WARNING)
                logger.propagate = False
            try:
                yield
            finally:
                raw[:0] = [f"{w.category.__name__}: {w.message}" for w in caught]
    finally:
        for name, (level, propagate) in saved.items():
            logger = logging.getLogger(name)
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
        result.warnings = list(dict.fromkeys(raw))

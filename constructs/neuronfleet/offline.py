"""Deploy a synthesised cloud assembly into moto: the offline half of the test kit.

Needs the ``test`` extra (moto, boto3). Call inside an active ``moto.mock_aws()`` whose account is the
fleet's (``MOTO_ACCOUNT_ID``). moto is handled as it is, with every gap stood in for explicitly and
reported back (DESIGN.md): CDK's bootstrap version parameter and asset bucket are created, the public SSM
AMI parameters the templates read are stood in with one of moto's AMIs, moto's lagging SageMaker
instance-type list is extended from botocore's service model, and ``Fn::GetAtt`` on a resource type moto
skips is replaced by a placeholder (template tests cover those resources).
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BOOTSTRAP_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION = "30"


@dataclass
class StackResult:
    name: str
    status: str
    reason: str
    resources: dict[str, int]
    """Created resource count by type (what moto keeps)."""
    skipped: list[str]
    """Resource types moto's CloudFormation does not implement (template tests cover them)."""
    placeholders: list[str]
    """``Logical.Attribute`` references to skipped resources, replaced by a placeholder."""


@dataclass
class DeployResult:
    stacks: list[StackResult] = field(default_factory=list)
    stand_ins: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.status == "CREATE_COMPLETE" for s in self.stacks)

    def resource_count(self) -> int:
        return sum(sum(s.resources.values()) for s in self.stacks)


def botocore_variant_instance_types() -> frozenset[str]:
    """Every ProductionVariantInstanceType in botocore's SageMaker service model (AWS's own list)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


@contextmanager
def sagemaker_instance_types_from_botocore() -> Iterator[None]:
    """moto's endpoint-config instance-type list lags AWS (it rejects ml.inf2.*). Accept exactly the types
    in botocore's service model as well; anything else still gets moto's own validation error."""
    from moto.sagemaker import models

    original = models.FakeEndpointConfig.validate_instance_type
    valid = botocore_variant_instance_types()

    def validate(self: Any, instance_type: str) -> None:
        if instance_type not in valid:
            original(self, instance_type)

    models.FakeEndpointConfig.validate_instance_type = validate  # type: ignore[method-assign]
    try:
        yield
    finally:
        models.FakeEndpointConfig.validate_instance_type = original  # type: ignore[method-assign]


def moto_supported_types() -> frozenset[str]:
    from moto.cloudformation.parsing import get_model_map

    return frozenset(get_model_map())


def deploy_assembly(assembly_dir: str | Path, *, only: list[str] | None = None) -> DeployResult:
    """Create every stack of the assembly (dependencies first) through moto's CloudFormation API."""
    import boto3

    root = Path(assembly_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    artifacts = manifest["artifacts"]
    stacks = [name for name, a in artifacts.items() if a["type"] == "aws:cloudformation:stack"]
    if only is not None:
        stacks = [s for s in stacks if s in only]
    result = DeployResult()
    env = artifacts[stacks[0]]["environment"].removeprefix("aws://")
    account, region = env.split("/")
    _bootstrap(account, region, result)
    supported = moto_supported_types()
    cfn = boto3.client("cloudformation", region_name=region)
    done: set[str] = set()
    for name in _order(stacks, artifacts):
        art = artifacts[name]
        for dep in art.get("dependencies", []):
            if artifacts[dep]["type"] == "cdk:asset-manifest":
                _publish_assets(root / artifacts[dep]["properties"]["file"], root, region)
        template = json.loads((root / art["properties"]["templateFile"]).read_text())
        _stand_in_ssm_parameters(template, region, result)
        skipped = sorted({r["Type"] for r in template.get("Resources", {}).values() if r["Type"] not in supported})
        skipped += _remove_uncreatable(template)
        placeholders = _replace_getatt_on_skipped(template, supported)
        _moto_compat(template, account, result)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # moto warns once per skipped type; reported in `skipped`
            try:
                cfn.create_stack(StackName=name, TemplateBody=json.dumps(template),
                                 Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"])
                desc = cfn.describe_stacks(StackName=name)["Stacks"][0]
                status, reason = desc["StackStatus"], desc.get("StackStatusReason", "")
            except Exception as exc:
                status, reason = "CREATE_FAILED", f"{type(exc).__name__}: {exc}"
        counts: dict[str, int] = {}
        if status == "CREATE_COMPLETE":
            for page in cfn.get_paginator("list_stack_resources").paginate(StackName=name):
                for r in page["StackResourceSummaries"]:
                    counts[r["ResourceType"]] = counts.get(r["ResourceType"], 0) + 1
        result.stacks.append(StackResult(name=name, status=status, reason=reason, resources=counts,
                                         skipped=skipped, placeholders=placeholders))
        done.add(name)
    return result


def _order(stacks: list[str], artifacts: dict[str, Any]) -> list[str]:
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        for dep in artifacts[name].get("dependencies", []):
            if dep in stacks:
                visit(dep)
        ordered.append(name)

    for s in stacks:
        visit(s)
    return ordered


def _bootstrap(account: str, region: str, result: DeployResult) -> None:
    import boto3

    ssm = boto3.client("ssm", region_name=region)
    ssm.put_parameter(Name=f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version", Value=BOOTSTRAP_VERSION,
                      Type="String", Overwrite=True)
    s3 = boto3.client("s3", region_name=region)
    bucket = f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{account}-{region}"
    kwargs: dict[str, Any] = {} if region == "us-east-1" else {
        "CreateBucketConfiguration": {"LocationConstraint": region}}
    s3.create_bucket(Bucket=bucket, **kwargs)
    result.stand_ins.append(f"CDK bootstrap: SSM /cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version={BOOTSTRAP_VERSION} "
                            f"and bucket {bucket}")


def _publish_assets(asset_manifest: Path, root: Path, region: str) -> None:
    import boto3

    s3 = boto3.client("s3", region_name=region)
    for asset in json.loads(asset_manifest.read_text()).get("files", {}).values():
        source = root / asset["source"]["path"]
        if asset["source"].get("packaging") == "zip":
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for path in sorted(p for p in source.rglob("*") if p.is_file()):
                    zf.write(path, path.relative_to(source).as_posix())
            body = buf.getvalue()
        else:
            body = source.read_bytes()
        for dest in asset["destinations"].values():
            s3.put_object(Bucket=dest["bucketName"], Key=dest["objectKey"], Body=body)


def _stand_in_ssm_parameters(template: dict[str, Any], region: str, result: DeployResult) -> None:
    import boto3

    ssm = boto3.client("ssm", region_name=region)
    ec2 = boto3.client("ec2", region_name=region)
    for param in template.get("Parameters", {}).values():
        if param.get("Type", "").startswith("AWS::SSM::Parameter::Value<") and "Default" in param:
            name = param["Default"]
            try:
                ssm.get_parameter(Name=name)
                continue
            except ssm.exceptions.ParameterNotFound:
                pass
            image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
            ssm.put_parameter(Name=name, Value=image, Type="String")
            result.stand_ins.append(f"SSM {name} = {image} (one of moto's AMIs)")


_REMOVED = "moto-removed"


def _remove_uncreatable(template: dict[str, Any]) -> list[str]:
    """Resources of a supported type that moto's CloudFormation cannot create as written: taken out (and
    reported), references to them become placeholders."""
    removed = []
    for logical, res in list(template.get("Resources", {}).items()):
        if res["Type"] == "AWS::Batch::JobDefinition" and res.get("Properties", {}).get("Type") == "multinode":
            template["Resources"][logical] = {"Type": _REMOVED}
            removed.append("AWS::Batch::JobDefinition (multinode: moto's CloudFormation registers container jobs only)")
    return sorted(set(removed))


def _replace_getatt_on_skipped(template: dict[str, Any], supported: frozenset[str]) -> list[str]:
    resources = template.get("Resources", {})
    skipped = {k for k, r in resources.items() if r["Type"] not in supported}
    removed = {k for k, r in resources.items() if r["Type"] == _REMOVED}
    replaced: list[str] = []

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::GetAtt"} and node["Fn::GetAtt"][0] in skipped:
                logical, attr = node["Fn::GetAtt"][:2]
                replaced.append(f"{logical}.{attr}")
                # ARN-shaped where an ARN is expected, so that IAM policies stay valid documents
                return f"arn:aws:cloudformation:::moto-skipped/{logical}/{attr}" if attr.endswith("Arn") \
                    else f"moto-skipped:{logical}.{attr}"
            if set(node) == {"Ref"} and node["Ref"] in removed:
                replaced.append(node["Ref"])
                return f"moto-skipped:{node['Ref']}"
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    for logical, res in resources.items():
        if logical not in skipped:
            resources[logical] = walk(res)
    template["Outputs"] = walk(template.get("Outputs", {}))
    for logical in removed:
        del resources[logical]
    return sorted(set(replaced))


# (type, attribute) whose GetAtt CloudFormation also answers with Ref, where moto implements only Ref
_REF_EQUIVALENT_ATTRS = {("AWS::Batch::ComputeEnvironment", "ComputeEnvironmentArn"),
                         ("AWS::Batch::JobQueue", "JobQueueArn"), ("AWS::Batch::JobDefinition", "JobDefinitionArn")}


def _moto_compat(template: dict[str, Any], account: str, result: DeployResult) -> None:
    """Rewrite, for moto only, what moto reads differently from CloudFormation; each rewrite is reported."""
    types = {k: r["Type"] for k, r in template.get("Resources", {}).items()}

    def ref_for_getatt(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::GetAtt"} and (types.get(node["Fn::GetAtt"][0]), node["Fn::GetAtt"][1]) \
                    in _REF_EQUIVALENT_ATTRS:
                _note(result, f"moto: GetAtt {node['Fn::GetAtt'][1]} read as Ref (same ARN in CloudFormation)")
                return {"Ref": node["Fn::GetAtt"][0]}
            return {k: ref_for_getatt(v) for k, v in node.items()}
        if isinstance(node, list):
            return [ref_for_getatt(v) for v in node]
        return node

    template["Resources"] = ref_for_getatt(template.get("Resources", {}))
    template["Outputs"] = ref_for_getatt(template.get("Outputs", {}))
    for logical, res in template.get("Resources", {}).items():
        props = res.get("Properties", {})
        if res["Type"] == "AWS::KMS::Key" and props.get("Tags"):
            # moto's KMS reads CloudFormation tags in the KMS API's TagKey/TagValue form
            props["Tags"] = [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in props["Tags"]]
            _note(result, "moto: AWS::KMS::Key tags passed as TagKey/TagValue")
        if res["Type"] == "AWS::Batch::ComputeEnvironment" and "ServiceRole" not in props:
            # AWS uses the AWSServiceRoleForBatch service-linked role when ServiceRole is omitted; moto requires one
            props["ServiceRole"] = _batch_service_linked_role()
            _note(result, "moto: AWS::Batch::ComputeEnvironment given the service-linked role AWS uses by default")
        if res["Type"] == "AWS::SSM::Parameter" and "Name" not in props:
            # CloudFormation generates a name when none is given; moto's SSM needs one
            props["Name"] = f"/moto-generated/{logical}"
            _note(result, "moto: AWS::SSM::Parameter without a Name given one (CloudFormation generates it)")
        if res["Type"] == "AWS::SSM::Parameter" and isinstance(props.get("Tags"), dict):
            # CloudFormation's SSM tags are a map; moto reads a Key/Value list
            props["Tags"] = [{"Key": k, "Value": v} for k, v in props["Tags"].items()]
            _note(result, "moto: AWS::SSM::Parameter tags passed as a Key/Value list")
        compute = props.get("ComputeResources", {})
        if res["Type"] == "AWS::Batch::ComputeEnvironment" and "SecurityGroupIds" not in compute:
            # AWS takes the groups from the launch template's interfaces; moto requires them on the environment
            lt = template["Resources"][compute["LaunchTemplate"]["LaunchTemplateId"]["Ref"]]
            groups = [g for i in lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"][:1] for g in i["Groups"]]
            compute["SecurityGroupIds"] = groups
            _note(result, "moto: AWS::Batch::ComputeEnvironment given its launch template's security groups")


def _batch_service_linked_role() -> str:
    import boto3

    iam = boto3.client("iam")
    existing = iam.list_roles(PathPrefix="/aws-service-role/batch.amazonaws.com/")["Roles"]
    if existing:
        return existing[0]["Arn"]
    return iam.create_service_linked_role(AWSServiceName="batch.amazonaws.com")["Role"]["Arn"]


def _note(result: DeployResult, text: str) -> None:
    if text not in result.stand_ins:
        result.stand_ins.append(text)

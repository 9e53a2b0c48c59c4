"""Template rewrites for what moto's CloudFormation reads differently from AWS's; each one is reported."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

REMOVED = "moto-removed"
_REMOVED = REMOVED
_REF_IS_ARN = "RefIsArn"
"""Marks a removed resource whose Ref is an ARN: its placeholder stays ARN-shaped, so IAM policies naming it stay
valid documents."""


MULTINODE = "moto's CloudFormation registers container jobs only"
CUSTOM = "a custom resource: moto runs its Lambda function only in Docker"
NOT_IMPLEMENTED = "moto's CloudFormation does not implement it: skipped"


def _uncreatable(res: dict[str, Any]) -> str | None:
    """Why moto's CloudFormation cannot create ``res`` as written (it is taken out), or None."""
    if res["Type"] == "AWS::Batch::JobDefinition" and res.get("Properties", {}).get("Type") == "multinode":
        return f"multinode: {MULTINODE}"
    if res["Type"].startswith("Custom::") or res["Type"] == "AWS::CloudFormation::CustomResource":
        # moto's CloudFormation runs a custom resource's Lambda function (in Docker) and waits for its answer:
        # without Docker the stack would stay CREATE_IN_PROGRESS (e.g. aws-cdk-lib's EKS kubectl resources)
        return CUSTOM
    return None


def remove_uncreatable(template: dict[str, Any]) -> list[str]:
    """Resources of a supported type that moto's CloudFormation cannot create as written: taken out (and
    reported), references to them become placeholders."""
    removed = []
    for logical, res in list(template.get("Resources", {}).items()):
        why = _uncreatable(res)
        if why is None:
            continue
        # a multinode job definition's Ref is its ARN (CloudFormation's AWS::Batch::JobDefinition return values)
        template["Resources"][logical] = {"Type": _REMOVED, **({_REF_IS_ARN: True} if why != CUSTOM else {})}
        removed.append(f"{res['Type']} ({why})")
    return sorted(set(removed))


def moto_gaps(template: dict[str, Any], supported: frozenset[str]) -> Counter[str]:
    """What of ``template`` moto does not deploy, each kind once with how many: '<type> (<why>)' -> count. A custom
    resource is counted once, as taken out (not also as a type moto does not implement)."""
    gaps = Counter[str]()
    for res in template.get("Resources", {}).values():
        why = _uncreatable(res)
        if why is not None:
            gaps[f"{res['Type']} ({why})"] += 1
        elif res["Type"] not in supported:
            gaps[f"{res['Type']} ({NOT_IMPLEMENTED})"] += 1
    return gaps


def replace_getatt_on_skipped(template: dict[str, Any], supported: frozenset[str]) -> list[str]:
    resources = template.get("Resources", {})
    skipped = {k for k, r in resources.items() if r["Type"] not in supported}
    removed = {k for k, r in resources.items() if r["Type"] == _REMOVED}
    arn_refs = {k for k in removed if resources[k].get(_REF_IS_ARN)}
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
                return f"arn:aws:cloudformation:::moto-skipped/{node['Ref']}/Ref" if node["Ref"] in arn_refs \
                    else f"moto-skipped:{node['Ref']}"
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    for logical, res in resources.items():
        if logical not in skipped:
            resources[logical] = walk(res)
        depends = res.get("DependsOn")
        if depends is not None and removed:
            kept = [d for d in ([depends] if isinstance(depends, str) else depends) if d not in removed]
            if kept:
                resources[logical]["DependsOn"] = kept
            else:
                resources[logical].pop("DependsOn")
    template["Outputs"] = _outputs_of_skipped(walk(template.get("Outputs", {})), skipped - removed, replaced)
    for logical in removed:
        del resources[logical]
    return sorted(set(replaced))


def _outputs_of_skipped(outputs: Any, skipped: set[str], replaced: list[str]) -> Any:
    """An output whose value is a ``Ref`` to a resource moto skips gets a placeholder name instead: moto resolves that
    Ref to nothing and drops the output, and with it the export another stack imports (e.g. the EKS cluster's name,
    exported to the capacity stack: ``ExportNotFound`` and the whole deploy stops). Only outputs: a resource's own
    Ref to a skipped one stays as moto reads it. No ':' in it (it may end up in a name that refuses one)."""
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Ref"} and node["Ref"] in skipped:
                replaced.append(node["Ref"])
                return f"moto-skipped-{node['Ref']}"
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node
    return walk(outputs)


# (type, attribute) whose GetAtt CloudFormation also answers with Ref, where moto implements only Ref
_REF_EQUIVALENT_ATTRS = {("AWS::Batch::ComputeEnvironment", "ComputeEnvironmentArn"),
                         ("AWS::Batch::JobQueue", "JobQueueArn"), ("AWS::Batch::JobDefinition", "JobDefinitionArn")}


def moto_compat(template: dict[str, Any], region: str, note: Callable[[str], None],
                client: Callable[[str, str], Any] | None = None) -> None:
    """Rewrite, for moto only, what moto reads differently from CloudFormation; each rewrite is reported."""
    types = {k: r["Type"] for k, r in template.get("Resources", {}).items()}

    def ref_for_getatt(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::GetAtt"} and (types.get(node["Fn::GetAtt"][0]), node["Fn::GetAtt"][1]) \
                    in _REF_EQUIVALENT_ATTRS:
                note(f"moto: GetAtt {node['Fn::GetAtt'][1]} read as Ref (same ARN in CloudFormation)")
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
            note("moto: AWS::KMS::Key tags passed as TagKey/TagValue")
        if res["Type"] == "AWS::Batch::ComputeEnvironment" and "ServiceRole" not in props:
            # AWS uses the AWSServiceRoleForBatch service-linked role when ServiceRole is omitted; moto requires one
            props["ServiceRole"] = _batch_service_linked_role(region, client)
            note("moto: AWS::Batch::ComputeEnvironment given the service-linked role AWS uses by default")
        if res["Type"] == "AWS::SSM::Parameter" and "Name" not in props:
            # CloudFormation generates a name when none is given; moto's SSM needs one
            props["Name"] = f"/moto-generated/{logical}"
            note("moto: AWS::SSM::Parameter without a Name given one (CloudFormation generates it)")
        if res["Type"] == "AWS::SSM::Parameter" and isinstance(props.get("Tags"), dict):
            # CloudFormation's SSM tags are a map; moto reads a Key/Value list
            props["Tags"] = [{"Key": k, "Value": v} for k, v in props["Tags"].items()]
            note("moto: AWS::SSM::Parameter tags passed as a Key/Value list")
        if res["Type"] == "AWS::SageMaker::EndpointConfig":
            for variant in props.get("ProductionVariants", []):
                if "InstancePools" in variant and "InstanceType" not in variant:
                    # InstancePools replace InstanceType in SageMaker; moto requires InstanceType and knows no pools
                    first = min(variant.pop("InstancePools"), key=lambda p: p.get("Priority", 0))
                    variant["InstanceType"] = first["InstanceType"]
                    note("moto: SageMaker has no InstancePools; the variant created on its first pool's type "
                         "(template tests cover the pools)")
        compute = props.get("ComputeResources", {})
        if res["Type"] == "AWS::Batch::ComputeEnvironment" and "SecurityGroupIds" not in compute:
            # AWS takes the groups from the launch template's interfaces; moto requires them on the environment
            lt = template["Resources"][compute["LaunchTemplate"]["LaunchTemplateId"]["Ref"]]
            groups = [g for i in lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"][:1] for g in i["Groups"]]
            compute["SecurityGroupIds"] = groups
            note("moto: AWS::Batch::ComputeEnvironment given its launch template's security groups")


def _batch_service_linked_role(region: str, client: Callable[[str, str], Any] | None) -> str:
    import boto3

    iam = client("iam", region) if client else boto3.client("iam", region_name=region)
    existing = iam.list_roles(PathPrefix="/aws-service-role/batch.amazonaws.com/")["Roles"]
    if existing:
        return existing[0]["Arn"]
    return iam.create_service_linked_role(AWSServiceName="batch.amazonaws.com")["Role"]["Arn"]

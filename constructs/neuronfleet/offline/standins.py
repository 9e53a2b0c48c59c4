"""The stand-ins for moto's gaps that both deploy modes apply to a template before moto reads it.

One code path, one list: ``deploy_assembly`` (in process, moto's CloudFormation API) and ``moto_server`` (the real
CDK CLI against an embedded moto server) both call ``prepare_template`` on every template, and both report each
stand-in once, with the same text, through ``note``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from neuronfleet.offline.moto_patches import SAGEMAKER_NAME_PROPERTIES, moto_supported_types
from neuronfleet.offline.rewrites import REMOVED, moto_compat, remove_uncreatable, replace_getatt_on_skipped

Client = Callable[[str, str], Any]
"""(service, region) -> a boto3 client that reaches the moto the stack is deployed into."""

Note = Callable[[str], None]
"""Records one stand-in (called once per use; the result keeps each text once)."""


def boto3_client(service: str, region: str) -> Any:
    """In process (inside ``moto.mock_aws()``): boto3's own client, which moto intercepts."""
    import boto3

    return boto3.client(service, region_name=region)


@dataclass
class Prepared:
    skipped: list[str] = field(default_factory=list)
    """Resource types moto's CloudFormation does not implement, and resources taken out (template tests cover them)."""
    placeholders: list[str] = field(default_factory=list)
    """``Logical.Attribute`` references to skipped resources, replaced by a placeholder."""


def prepare_template(template: dict[str, Any], *, region: str, note: Note, client: Client = boto3_client) -> Prepared:
    """Rewrite ``template`` in place for moto and create what it reads that moto lacks; each stand-in is noted."""
    stand_in_ssm_parameters(template, region, note, client)
    supported = moto_supported_types()
    removed = remove_uncreatable(template)  # (custom resources are reported there, with the reason)
    skipped = sorted({r["Type"] for r in template.get("Resources", {}).values()
                      if r["Type"] not in supported and r["Type"] != REMOVED}) + removed
    placeholders = replace_getatt_on_skipped(template, supported)
    moto_compat(template, region, note, client)
    report_sagemaker_names(template, note)
    return Prepared(skipped=skipped, placeholders=placeholders)


def sagemaker_types_note(extended: list[str]) -> str:
    return (f"moto: SageMaker's instance-type list lags AWS and rejects {', '.join(sorted(set(extended)))}; "
            "accepted because botocore's ProductionVariantInstanceType lists each (unknown types still fail)")


def report_sagemaker_names(template: dict[str, Any], note: Note) -> None:
    for res in template.get("Resources", {}).values():
        prop = SAGEMAKER_NAME_PROPERTIES.get(res["Type"])
        if prop and prop in res.get("Properties", {}):
            note(f"moto: {res['Type']} ignores {prop} (it names the resource <stack>-<logical id>-<random>)"
                 f"; created with the template's {prop}, as CloudFormation does")


def stand_in_ssm_parameters(template: dict[str, Any], region: str, note: Note, client: Client = boto3_client) -> None:
    """Public AMI parameters (``/aws/service/...``) that moto does not hold: one of moto's AMIs stands in."""
    ssm = client("ssm", region)
    ec2 = client("ec2", region)
    for param in template.get("Parameters", {}).values():
        if param.get("Type") == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>" and "Default" in param:
            name = param["Default"]
            try:
                ssm.get_parameter(Name=name)
                continue
            except ssm.exceptions.ParameterNotFound:
                pass
            image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
            ssm.put_parameter(Name=name, Value=image, Type="String")
            note(f"moto: SSM has no {name} in {region}; set to {image} (one of moto's AMIs)")

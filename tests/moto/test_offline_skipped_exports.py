"""A stack that exports the Ref of a resource moto's CloudFormation skips (config/eks.yaml: the EKS cluster's name,
imported by the capacity stack) still exports something, so the importing stack deploys: ``make demo ENV=eks``
stopped at ``ExportNotFound: No export named nf-eks-train-pretrain:ExportsOutputRefEksCluster...`` before
(neuronfleet.offline.rewrites). Moto's own CloudFormation, in process."""

from __future__ import annotations

import copy
import json
from typing import Any

import boto3
import moto

from neuronfleet.offline.standins import prepare_template

REGION = "us-east-2"
EXPORTER = {
    "Resources": {"Cluster": {"Type": "AWS::EKS::Cluster", "Properties": {"Name": "c", "RoleArn": "arn:aws:iam::1:role/r",
                                                                            "ResourcesVpcConfig": {"SubnetIds": []}}},
                  "Kept": {"Type": "AWS::SSM::Parameter", "Properties": {"Name": "/kept", "Type": "String",
                                                                          "Value": "x"}}},
    "Outputs": {"ExportsOutputRefCluster": {"Value": {"Ref": "Cluster"},
                                            "Export": {"Name": "exporter:ExportsOutputRefCluster"}},
                "Kept": {"Value": {"Ref": "Kept"}}},
}
IMPORTER = {"Resources": {"Uses": {"Type": "AWS::SSM::Parameter", "Properties": {
    "Name": "/uses", "Type": "String", "Value": {"Fn::ImportValue": "exporter:ExportsOutputRefCluster"}}}}}


def _create(cfn: Any, name: str, template: dict[str, Any]) -> str:
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template))
    return cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]


def _prepared(template: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(template)
    prepare_template(out, region=REGION, note=lambda text: None)
    return out


def test_an_export_of_a_skipped_resource_still_reaches_its_importer() -> None:
    with moto.mock_aws():
        cfn = boto3.client("cloudformation", region_name=REGION)
        exporter = _prepared(EXPORTER)
        assert exporter["Outputs"]["ExportsOutputRefCluster"]["Value"] == "moto-skipped-Cluster"
        assert exporter["Outputs"]["Kept"]["Value"] == {"Ref": "Kept"}  # a created resource's Ref is left alone
        assert _create(cfn, "exporter", exporter) == "CREATE_COMPLETE"
        assert _create(cfn, "importer", _prepared(IMPORTER)) == "CREATE_COMPLETE"
        ssm = boto3.client("ssm", region_name=REGION)
        assert ssm.get_parameter(Name="/uses")["Parameter"]["Value"] == "moto-skipped-Cluster"


def test_without_the_placeholder_the_importer_is_refused() -> None:
    """What the rewrite is for: moto resolves the skipped resource's Ref to nothing, so its export has no value and
    the importing stack is refused as the demo's capacity stack was."""
    import botocore.exceptions
    import pytest

    with moto.mock_aws():
        cfn = boto3.client("cloudformation", region_name=REGION)
        _create(cfn, "exporter", copy.deepcopy(EXPORTER))
        [export] = [e for e in cfn.list_exports()["Exports"] if e["Name"] == "exporter:ExportsOutputRefCluster"]
        assert "Value" not in export
        with pytest.raises(botocore.exceptions.ClientError, match="No export named exporter:ExportsOutputRefCluster"):
            cfn.create_stack(StackName="importer", TemplateBody=json.dumps(IMPORTER))

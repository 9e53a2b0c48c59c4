"""``make demo`` says up front what moto cannot deploy: each kind once, with how many and why (neuronfleet.offline.
rewrites.moto_gaps). config/eks.yaml's first listing counted each aws-cdk-lib Helm chart twice ('5 x Custom::AWSCDK-
EKS-HelmChart' as a type moto lacks and '1 x ... (a custom resource ...)' as taken out, the 1 being a set's)."""

from __future__ import annotations

import json
from pathlib import Path

from neuronfleet.offline.rewrites import moto_gaps
from scripts.demo import moto_gaps as demo_gaps

SUPPORTED = frozenset({"AWS::SSM::Parameter", "AWS::Batch::JobDefinition", "AWS::Lambda::Function"})
TEMPLATE = {"Resources": {
    "Chart1": {"Type": "Custom::AWSCDK-EKS-HelmChart"}, "Chart2": {"Type": "Custom::AWSCDK-EKS-HelmChart"},
    "Manifest": {"Type": "Custom::AWSCDK-EKS-KubernetesResource"},
    "Cluster": {"Type": "AWS::EKS::Cluster"}, "Addon1": {"Type": "AWS::EKS::Addon"}, "Addon2": {"Type": "AWS::EKS::Addon"},
    "Mnp": {"Type": "AWS::Batch::JobDefinition", "Properties": {"Type": "multinode"}},
    "Single": {"Type": "AWS::Batch::JobDefinition", "Properties": {"Type": "container"}},
    "Param": {"Type": "AWS::SSM::Parameter"}}}


def test_each_resource_is_counted_once_with_why() -> None:
    assert dict(moto_gaps(TEMPLATE, SUPPORTED)) == {
        "Custom::AWSCDK-EKS-HelmChart (a custom resource: moto runs its Lambda function only in Docker)": 2,
        "Custom::AWSCDK-EKS-KubernetesResource (a custom resource: moto runs its Lambda function only in Docker)": 1,
        "AWS::EKS::Cluster (moto's CloudFormation does not implement it: skipped)": 1,
        "AWS::EKS::Addon (moto's CloudFormation does not implement it: skipped)": 2,
        "AWS::Batch::JobDefinition (multinode: moto's CloudFormation registers container jobs only)": 1}


def test_the_demo_lists_them_across_templates(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.template.json").write_text(json.dumps(TEMPLATE))
    lines = demo_gaps(tmp_path)
    assert "4 x Custom::AWSCDK-EKS-HelmChart (a custom resource: moto runs its Lambda function only in Docker)" in lines
    assert "4 x AWS::EKS::Addon (moto's CloudFormation does not implement it: skipped)" in lines
    assert not any("SSM" in line or "Lambda::Function" in line for line in lines)  # the rest moto deploys
    assert len(lines) == 5

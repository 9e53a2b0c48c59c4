"""config/eks.yaml deployed into moto as far as moto can: the network, alerts, cost and the EKS stack's IAM, launch
templates, kubectl layers and provider functions are created; what moto's CloudFormation cannot take is listed as
skipped (the AWS::EKS::* types) or taken out as a custom resource (aws-cdk-lib's kubectl resources: moto would run
their Lambda function in Docker and wait), exactly as the Batch stacks list theirs. tests/constructs/test_eks.py
covers what moto skips on the template."""

from __future__ import annotations

from neuronfleet import CATALOG
from tests.moto.test_moto_deploy import _deploy

EKS_SKIPPED = {"AWS::EKS::AccessEntry", "AWS::EKS::Addon", "AWS::EKS::Cluster", "AWS::EKS::Nodegroup",
               "AWS::EKS::PodIdentityAssociation"}


def test_eks_fleet_deploys_as_far_as_moto_can(synth_fleet) -> None:
    result, seen = _deploy(synth_fleet, "eks")
    assert [(s.name, s.status) for s in result.stacks] == [
        (f"nf-eks-{part}", "CREATE_COMPLETE") for part in ("network", "alerts", "train-pretrain", "capacity", "cost")]
    eks = next(s for s in result.stacks if s.name == "nf-eks-train-pretrain")
    assert set(eks.skipped) >= EKS_SKIPPED
    removed = {s for s in eks.skipped if "custom resource" in s}
    assert {s.split(" ")[0] for s in removed} == {"Custom::AWSCDK-EKS-HelmChart", "Custom::AWSCDK-EKS-KubernetesResource"}
    # the kubectl layer and the provider's functions are real in moto
    assert eks.resources["AWS::Lambda::LayerVersion"] == 2 and eks.resources["AWS::Lambda::Function"] >= 2
    assert seen["queues"] == []  # no AWS Batch on the EKS path
    # every node group's launch template reached EC2 with every EFA interface and no subnet (the node group's)
    by_type = {lt["InstanceType"]: lt for lt in seen["launch_templates"] if "InstanceType" in lt}
    for instance_type in ("trn2.48xlarge", "trn2u.48xlarge", "trn1.32xlarge", "inf2.xlarge"):
        interfaces = by_type[instance_type]["NetworkInterfaces"]
        assert len(interfaces) == len(CATALOG.get(instance_type).network_interfaces())
        assert all("SubnetId" not in i and len(i["Groups"]) == 2 for i in interfaces)
        assert by_type[instance_type]["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert by_type["trn2u.48xlarge"]["InstanceMarketOptions"]["MarketType"] == "capacity-block"
    assert seen["leaked"]["warnings"] == []

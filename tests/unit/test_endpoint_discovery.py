"""The fleet's endpoints found at run time (lambdas/cost/logic/discovery.py): which endpoints are the fleet's, and each
one's model from its endpoint configuration, Neuron or GPU by the catalog's family of each instance type. The
adapter (inventory.FleetEndpoints) against botocore Stubbers on the real service models: every page, and an
endpoint deleted between the listing and its description skipped with its reason."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from neuronfleet.facts.catalog import CATALOG, accelerators_of
from neuronfleet.lambdas.cost.adapters.inventory import FleetEndpoints
from neuronfleet.lambdas.cost.logic.discovery import endpoint_model, endpoint_name, fleet_endpoints, gone, variant_types
from neuronfleet.lambdas.cost.logic.economics import EndpointModel

ACC = accelerators_of(CATALOG)
ARN = "arn:aws:sagemaker:us-east-2:111111111111:endpoint/{}"
CONFIG_ARN = "arn:aws:sagemaker:us-east-2:111111111111:endpoint-config/cfg"


def variant(name: str, instance_type: str | None = None, weight: float | None = 1.0, **more: Any) -> dict[str, Any]:
    v: dict[str, Any] = {"VariantName": name, "ModelName": f"{name}-model", "InitialInstanceCount": 1, **more}
    if instance_type:
        v["InstanceType"] = instance_type
    if weight is not None:
        v["InitialVariantWeight"] = weight
    return v


def config(*production: dict[str, Any], shadows: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"EndpointConfigName": "cfg", "ProductionVariants": list(production)}
    if shadows:
        out["ShadowProductionVariants"] = list(shadows)
    return out


def model(cfg: dict[str, Any]) -> EndpointModel | None:
    return endpoint_model("chat", cfg, ACC)[0]


def test_a_weighted_gpu_variant_is_the_baseline() -> None:
    assert model(config(variant("neuron", "ml.inf2.xlarge"), variant("gpu", "ml.p5.48xlarge", 1.0))) == EndpointModel(
        endpoint="chat", neuron_types=("ml.inf2.xlarge",), gpu_type="ml.p5.48xlarge", gpu_role="baseline")


def test_a_gpu_variant_at_weight_0_is_a_standby() -> None:
    got = model(config(variant("neuron", "ml.inf2.48xlarge"), variant("gpu", "ml.p5.48xlarge", 0.0)))
    assert got is not None and (got.gpu_type, got.gpu_role) == ("ml.p5.48xlarge", "standby")


def test_a_weight_left_out_is_1_as_sagemaker_defaults_it() -> None:
    got = model(config(variant("neuron", "ml.inf2.xlarge"), variant("gpu", "ml.g6e.12xlarge", weight=None)))
    assert got is not None and got.gpu_role == "baseline"


def test_a_shadow_gpu_variant_is_a_shadow_whatever_its_weight() -> None:
    got = model(config(variant("neuron", "ml.trn1.32xlarge"), shadows=(variant("gpu", "ml.g6e.12xlarge", 1.0),)))
    assert got == EndpointModel(endpoint="chat", neuron_types=("ml.trn1.32xlarge",), gpu_type="ml.g6e.12xlarge",
                                gpu_role="shadow")


def test_instance_pools_by_priority_neuron_types_and_gpu_pools_apart() -> None:
    pools = [{"InstanceType": "ml.p5.48xlarge", "Priority": 3, "ModelNameOverride": "gpu-p5"},
             {"InstanceType": "ml.inf2.48xlarge", "Priority": 1},
             {"InstanceType": "ml.p5en.48xlarge", "Priority": 2, "ModelNameOverride": "gpu-p5en"}]
    neuron = variant("neuron", InstancePools=pools)
    assert variant_types(neuron) == ("ml.inf2.48xlarge", "ml.p5en.48xlarge", "ml.p5.48xlarge")
    got, notes = endpoint_model("chat", config(neuron), ACC)
    assert got == EndpointModel(endpoint="chat", neuron_types=("ml.inf2.48xlarge",),
                                gpu_pool_types=("ml.p5en.48xlarge", "ml.p5.48xlarge"))
    assert notes == ()


def test_two_neuron_pools_are_both_neuron_types() -> None:
    pools = [{"InstanceType": "ml.inf2.48xlarge", "Priority": 1}, {"InstanceType": "ml.trn1.32xlarge", "Priority": 2}]
    got = model(config(variant("neuron", InstancePools=pools), variant("gpu", "ml.p5.48xlarge", 0.0)))
    assert got is not None and got.neuron_types == ("ml.inf2.48xlarge", "ml.trn1.32xlarge") and not got.gpu_pool_types


def test_a_neuron_only_endpoint_has_no_gpu_variant() -> None:
    assert model(config(variant("neuron", "ml.inf2.xlarge"))) == EndpointModel(
        endpoint="chat", neuron_types=("ml.inf2.xlarge",), gpu_type="", gpu_role="")


def test_a_gpu_only_endpoint_is_modelled_with_no_neuron_types() -> None:
    assert model(config(variant("gpu", "ml.g5.xlarge"))) == EndpointModel(
        endpoint="chat", neuron_types=(), gpu_type="ml.g5.xlarge", gpu_role="baseline")


def test_neuron_or_gpu_is_the_catalogs_family_never_the_variant_name() -> None:
    # named the other way round: the family decides, and the report is told invocations are read by name
    got, notes = endpoint_model("chat", config(variant("gpu", "ml.inf2.xlarge"), variant("neuron", "ml.p5.48xlarge", 0)),
                                ACC)
    assert got == EndpointModel(endpoint="chat", neuron_types=("ml.inf2.xlarge",), gpu_type="ml.p5.48xlarge",
                                gpu_role="standby")
    assert notes == ("variant gpu is the neuron variant by its instance types, but the report reads the invocations "
                     "of the variant named neuron: its work is not counted",
                     "variant neuron is the gpu variant by its instance types, but the report reads the invocations "
                     "of the variant named gpu: its work is not counted")
    got, notes = endpoint_model("chat", config(variant("AllTraffic", "ml.inf2.xlarge")), ACC)
    assert got is not None and got.neuron_types == ("ml.inf2.xlarge",)
    assert notes == ("variant AllTraffic is the neuron variant by its instance types, but the report reads the "
                     "invocations of the variant named neuron: its work is not counted",)


def test_variants_off_the_catalog_are_left_out_with_the_reason() -> None:
    got, notes = endpoint_model("chat", config(variant("neuron", "ml.inf2.xlarge"), variant("cpu", "ml.m5.large"),
                                               variant("serverless", None, ServerlessConfig={"MemorySizeInMB": 2048})),
                                ACC)
    assert got == EndpointModel(endpoint="chat", neuron_types=("ml.inf2.xlarge",))
    assert notes == ("variant cpu left out: on ml.m5.large: not an accelerator type of the catalog",
                     "variant serverless left out: no instance type (serverless)")
    assert endpoint_model("web", config(variant("AllTraffic", "ml.m5.large")), ACC)[0] is None


def test_a_second_gpu_variant_is_left_out_not_merged() -> None:
    got, notes = endpoint_model("chat", config(variant("neuron", "ml.inf2.xlarge"), variant("gpu", "ml.p5.48xlarge", 0),
                                               variant("gpu-b", "ml.g6e.12xlarge")), ACC)
    assert got is not None and (got.gpu_type, got.gpu_role) == ("ml.p5.48xlarge", "standby")
    assert notes == ("variant gpu-b left out: the report models one Neuron and one GPU variant per endpoint",)


def test_only_the_fleets_endpoints_once_each_sorted() -> None:
    def tagged(name: str, fleet: str, arn: str = ARN) -> dict[str, Any]:
        return {"ResourceARN": arn.format(name), "Tags": [{"Key": "team", "Value": "x"},
                                                          {"Key": "neuronfleet:fleet", "Value": fleet}]}

    mappings = [tagged("nf-prod-embed", "nf-prod"), tagged("nf-other-chat", "nf-other"),
                tagged("nf-prod-chat", "nf-prod"), tagged("nf-prod-chat", "nf-prod"),
                tagged("cfg", "nf-prod", arn="arn:aws:sagemaker:us-east-2:1:endpoint-config/{}"),
                {"ResourceARN": ARN.format("untagged"), "Tags": []}]
    assert fleet_endpoints(mappings, "nf-prod") == ["nf-prod-chat", "nf-prod-embed"]
    assert fleet_endpoints(mappings, "nf-other") == ["nf-other-chat"]
    assert fleet_endpoints(mappings, "nf-dev") == []


def test_endpoint_names_from_arns() -> None:
    assert endpoint_name("arn:aws-us-gov:sagemaker:us-gov-west-1:111111111111:endpoint/a-b-1") == "a-b-1"
    for bad in ("arn:aws:sagemaker:us-east-2:1:endpoint-config/x", "arn:aws:sagemaker:us-east-2:1:endpoint/",
                "arn:aws:ec2:us-east-2:1:endpoint/x", "chat"):
        with pytest.raises(ValueError, match="not a SageMaker endpoint ARN"):
            endpoint_name(bad)


def test_gone_is_only_sagemakers_could_not_find() -> None:
    assert gone({"Code": "ValidationException", "Message": "Could not find endpoint configuration 'arn:...'."})
    assert not gone({"Code": "ValidationException", "Message": "1 validation error detected"})
    assert not gone({"Code": "AccessDeniedException", "Message": "Could not find"})


# --- the adapter, against Stubbers on the real service models -------------------------------------------------------


def _clients() -> tuple[Any, Stubber, Any, Stubber]:
    tagging = boto3.client("resourcegroupstaggingapi", region_name="us-east-2", aws_access_key_id="x",
                           aws_secret_access_key="x")
    sm = boto3.client("sagemaker", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    return tagging, Stubber(tagging), sm, Stubber(sm)


def _page(names: list[str], fleet: str = "nf-prod", token: str = "") -> dict[str, Any]:
    return {"ResourceTagMappingList": [{"ResourceARN": ARN.format(n), "Tags": [
        {"Key": "neuronfleet:fleet", "Value": fleet}]} for n in names], "PaginationToken": token}


FILTERS = {"ResourceTypeFilters": ["sagemaker:endpoint"], "TagFilters": [{"Key": "neuronfleet:fleet",
                                                                          "Values": ["nf-prod"]}]}


def test_every_page_of_getresources_is_read_with_the_fleet_filter() -> None:
    tagging, tags, sm, _ = _clients()
    tags.add_response("get_resources", _page(["nf-prod-a", "nf-prod-b"], token="page-2"), FILTERS)
    tags.add_response("get_resources", _page(["nf-prod-c"], token="page-3"), {**FILTERS, "PaginationToken": "page-2"})
    tags.add_response("get_resources", _page([], token=""), {**FILTERS, "PaginationToken": "page-3"})
    with tags:
        assert FleetEndpoints(tagging=tagging, sagemaker=sm, fleet="nf-prod").names() == [
            "nf-prod-a", "nf-prod-b", "nf-prod-c"]
    tags.assert_no_pending_responses()


def test_models_from_describe_endpoint_and_its_config_and_a_deleted_one_is_skipped_with_its_reason() -> None:
    tagging, tags, sm, stub = _clients()
    tags.add_response("get_resources", _page(["chat", "gone", "old-config", "web"]), FILTERS)
    stub.add_response("describe_endpoint", _described("chat", "chat-cfg"), {"EndpointName": "chat"})
    stub.add_response("describe_endpoint_config", {**config(variant("neuron", "ml.inf2.xlarge"),
                                                            variant("gpu", "ml.p5.48xlarge", 0.0)),
                                                   "EndpointConfigName": "chat-cfg", "EndpointConfigArn": CONFIG_ARN,
                                                   "CreationTime": "2026-11-01T00:00:00Z"},
                      {"EndpointConfigName": "chat-cfg"})
    stub.add_client_error("describe_endpoint", "ValidationException",
                          "Could not find endpoint 'arn:aws:sagemaker:us-east-2:111111111111:endpoint/gone'.",
                          expected_params={"EndpointName": "gone"})
    stub.add_response("describe_endpoint", _described("old-config", "deleted-cfg"), {"EndpointName": "old-config"})
    stub.add_client_error("describe_endpoint_config", "ValidationException",
                          "Could not find endpoint configuration 'deleted-cfg'.",
                          expected_params={"EndpointConfigName": "deleted-cfg"})
    stub.add_response("describe_endpoint", _described("web", "web-cfg"), {"EndpointName": "web"})
    stub.add_response("describe_endpoint_config", {**config(variant("AllTraffic", "ml.m5.large")),
                                                   "EndpointConfigName": "web-cfg", "EndpointConfigArn": CONFIG_ARN,
                                                   "CreationTime": "2026-11-01T00:00:00Z"},
                      {"EndpointConfigName": "web-cfg"})
    skips: list[tuple[str, str]] = []
    with tags, stub:
        found = FleetEndpoints(tagging=tagging, sagemaker=sm, fleet="nf-prod",
                               on_skip=lambda n, r: skips.append((n, r))).models(ACC)
    assert found.models == (EndpointModel(endpoint="chat", neuron_types=("ml.inf2.xlarge",),
                                          gpu_type="ml.p5.48xlarge", gpu_role="standby"),)
    assert list(found.skipped) == ["gone", "old-config", "web"] == [n for n, _ in skips]
    assert found.skipped["gone"].startswith("not described (deleted since it was listed?): Could not find endpoint")
    assert "Could not find endpoint configuration 'deleted-cfg'" in found.skipped["old-config"]
    assert found.skipped["web"] == "no variant of web-cfg runs on an accelerator type of the catalog"
    assert found.notes == {"web": ("variant AllTraffic left out: on ml.m5.large: not an accelerator type of the "
                                   "catalog",)}


def test_any_other_error_is_raised_not_skipped() -> None:
    tagging, tags, sm, stub = _clients()
    tags.add_response("get_resources", _page(["chat"]), FILTERS)
    stub.add_client_error("describe_endpoint", "AccessDeniedException", "not authorized",
                          expected_params={"EndpointName": "chat"})
    with tags, stub, pytest.raises(sm.exceptions.ClientError, match="not authorized"):
        FleetEndpoints(tagging=tagging, sagemaker=sm, fleet="nf-prod").models(ACC)


def _described(name: str, config_name: str) -> dict[str, Any]:
    return {"EndpointName": name, "EndpointArn": ARN.format(name), "EndpointConfigName": config_name,
            "EndpointStatus": "InService", "CreationTime": "2026-11-01T00:00:00Z",
            "LastModifiedTime": "2026-11-01T00:00:00Z"}

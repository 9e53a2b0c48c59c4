"""The shared pool's facts, each against its source: Kueue 0.19.2's own CRDs and chart (tests/data/kueue, copied
verbatim), botocore 1.44.5's scheduler model, the Kubernetes 1.36 schemas kubernetes-validate ships."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import botocore.session
import kubernetes_validate
import pytest
import yaml

from neuronfleet.sharing import pins

DATA = Path(__file__).resolve().parents[1] / "data" / "kueue"
K8S = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.36.0-local-strict"


def _blob(path: Path) -> str:
    body = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def crd_schema(plural: str, version: str = "v1beta2") -> dict:
    crd = yaml.safe_load((DATA / f"kueue.x-k8s.io_{plural}.yaml").read_text())
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)


def test_copies_are_verbatim() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| .* \| ([0-9a-f]{40}) \|$", (DATA / "README.md").read_text(), re.M)
    assert len(rows) == len([p for p in DATA.iterdir() if p.name != "README.md"]) == 11
    for name, blob in rows:
        assert _blob(DATA / name) == blob, name


def test_chart_is_the_pinned_release() -> None:
    chart = yaml.safe_load((DATA / "Chart.yaml").read_text())
    assert chart["version"] == pins.KUEUE_VERSION and chart["appVersion"] == f"v{pins.KUEUE_VERSION}"
    assert pins.KUEUE_MANIFESTS.endswith(f"/v{pins.KUEUE_VERSION}/manifests.yaml")
    assert pins.KUEUE_COMMIT in (DATA / "README.md").read_text()


def test_the_kit_writes_the_storage_version() -> None:
    for plural in ("clusterqueues", "localqueues", "resourceflavors", "workloadpriorityclasses"):
        v1beta1, v1beta2 = crd_schema(plural, "v1beta1"), crd_schema(plural)
        assert v1beta2["storage"] and v1beta2["served"] and not v1beta1["storage"]
    assert pins.KUEUE_API == "kueue.x-k8s.io/v1beta2"


def test_cluster_queue_fields_and_enums() -> None:
    spec = crd_schema("clusterqueues")["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert "cohortName" in spec and "cohort" not in spec  # v1beta2 renamed it
    preemption = spec["preemption"]["properties"]
    assert tuple(preemption["reclaimWithinCohort"]["enum"]) == pins.RECLAIM_WITHIN_COHORT
    assert preemption["reclaimWithinCohort"]["default"] == "Never"  # nothing reclaimed unless the kit says so
    assert pins.RECLAIM in pins.RECLAIM_WITHIN_COHORT
    assert tuple(spec["stopPolicy"]["enum"]) == pins.STOP_POLICIES
    resource = spec["resourceGroups"]["items"]["properties"]["flavors"]["items"]["properties"]["resources"]["items"]
    assert {"name", "nominalQuota", "borrowingLimit", "lendingLimit"} <= set(resource["properties"])
    assert "maximum amount of unused quota" in resource["properties"]["lendingLimit"]["description"]
    assert "If null, it means that there is no borrowing limit." in resource["properties"]["borrowingLimit"]["description"]


def test_workload_priority_class_has_a_value() -> None:
    schema = crd_schema("workloadpriorityclasses")["schema"]["openAPIV3Schema"]
    assert "value" in schema["required"] and schema["properties"]["value"]["type"] == "integer"


def test_scheduler_expressions_in_botocore() -> None:
    model = botocore.session.get_session().get_service_model("scheduler")
    create = model.operation_model("CreateSchedule").input_shape
    assert {"ScheduleExpression", "FlexibleTimeWindow"} <= set(create.required_members)
    doc = create.members["ScheduleExpression"].documentation
    assert "rate(value unit)" in doc and "<code>minute</code> | <code>minutes</code>" in doc
    assert re.fullmatch(r"rate\(1 minute\)", pins.SCHEDULE_EXPRESSION)
    assert create.members["ScheduleExpressionTimezone"].documentation == (
        "<p>The timezone in which the scheduling expression is evaluated.</p>")
    assert create.members["FlexibleTimeWindow"].members["Mode"].enum == ["OFF", "FLEXIBLE"]


@pytest.mark.parametrize(("fact", "file", "path"), [
    (pins.GRACE_PERIOD, "podspec-v1.json", ("terminationGracePeriodSeconds",)),
    (pins.PRESTOP, "lifecycle-v1.json", ("preStop",)),
    (pins.JOB_SUSPEND, "jobspec-batch-v1.json", ("suspend",)),
])
def test_kubernetes_termination_facts(fact: pins.Fact, file: str, path: tuple[str, ...]) -> None:
    description = json.loads((K8S / file).read_text())["properties"][path[0]]["description"]
    assert fact.text.strip()  # an empty fact would be "in" any description
    for part in fact.text.split(" [...] "):
        assert part in description, part


def test_grace_period_is_an_allowed_value() -> None:
    assert isinstance(pins.TRAINING_GRACE_SECONDS, int) and pins.TRAINING_GRACE_SECONDS > 30


def _doc(service: str, shape: str, member: str | None = None) -> str:
    model = botocore.session.get_session().get_service_model(service)
    found = model.shape_for(shape) if member else model.operation_model(shape)
    text = found.members[member].documentation if member else found.documentation
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text)).strip()


@pytest.mark.parametrize(("fact", "service", "shape", "member"), [
    (pins.BATCH_DESIRED_ONLY_UP, "batch", "ComputeResourceUpdate", "desiredvCpus"),
    (pins.BATCH_DISABLED_QUEUE, "batch", "UpdateJobQueueRequest", "state"),
    (pins.BATCH_TERMINATE, "batch", "TerminateJob", None),
    (pins.SAGEMAKER_ML_RESERVATION, "sagemaker", "ProductionVariantCapacityReservationConfig",
     "CapacityReservationPreference"),
])
def test_why_the_batch_variant_is_not_built(fact: pins.Fact, service: str, shape: str, member: str | None) -> None:
    assert fact.text in _doc(service, shape, member)


def test_sagemaker_reservations_are_sagemaker_arns() -> None:
    model = botocore.session.get_session().get_service_model("sagemaker")
    arn = model.shape_for("ProductionVariantCapacityReservationConfig").members["MlReservationArn"]
    assert re.fullmatch(arn.metadata["pattern"], "arn:aws:sagemaker:us-east-2:111111111111:training-plan/p")
    assert not re.fullmatch(arn.metadata["pattern"], "cr-0123456789abcdef0")


def test_the_kubectl_handler_pulls_an_oci_chart_whole() -> None:
    import importlib.util
    import tarfile

    spec = importlib.util.find_spec("aws_cdk")  # located, not imported: no Node.js in unit tests
    assert spec is not None and spec.submodule_search_locations
    bundle = next((Path(next(iter(spec.submodule_search_locations))) / "_jsii").glob("aws-cdk-lib@*.jsii.tgz"))
    assert bundle.name == "aws-cdk-lib@2.275.0.jsii.tgz"
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("package/custom-resource-handlers/dist/aws-eks-v2/kubectl-handler/helm/__init__.py")
        assert member is not None
        source = member.read().decode()
    assert pins.KUBECTL_HANDLER_OCI.text in source
    assert "OCI repository format not recognized, falling back to helm pull" in source
    assert pins.KUEUE_CHART.rpartition("/")[2] == "kueue"  # helm pull saves it under the reference's last part

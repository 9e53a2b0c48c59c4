"""Every Kubernetes object the kit writes for EKS, validated offline against the Kubernetes schemas of the pinned
version (kubernetes-validate, strict: no unknown field), next to the publishers' own examples (tests/data/eks); and
what the objects say: whole UltraServers' Neuron and EFA devices, launch.py's rank inputs, the Neuron toleration."""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from neuronfleet import CATALOG
from neuronfleet.eks import manifests
from neuronfleet.facts.eks_labels import EFA_RESOURCE, NEURON_RESOURCE, NEURON_TAINT_KEY
from neuronfleet.facts.eks_pins import DEFAULT_KUBERNETES_VERSION
from neuronfleet.node import launch
from neuronfleet.settings import Capacity
from neuronfleet.settings.eks import NeuronEksClusterSettings, NeuronNodegroupSettings

DATA = Path(__file__).resolve().parents[1] / "data" / "eks"
BLOCKS = "arn:aws:resource-groups:us-east-2:111111111111:group/ultra"
ULTRA = NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=8,
                                capacity=Capacity.capacity_block(resource_group_arn=BLOCKS))
TRN1 = NeuronNodegroupSettings(name="trn1", instance_type="trn1.32xlarge", count=2)
INF2 = NeuronNodegroupSettings(name="serve", instance_type="inf2.xlarge", count=1)
SETTINGS = NeuronEksClusterSettings(node_groups=[ULTRA, TRN1, INF2])


def valid(obj: dict) -> None:
    kubernetes_validate.validate(obj, DEFAULT_KUBERNETES_VERSION, strict=True)


def everything() -> list[dict]:
    return [
        *manifests.namespaces(),
        *manifests.utilisation_publisher(SETTINGS.node_groups, namespace_metrics="NeuronFleet", region="us-east-2"),
        *manifests.fsx_volume(file_system_id="fs-0123456789abcdef0", dns_name="fs-0123456789abcdef0.fsx.us-east-2"
                              ".amazonaws.com", mount_name="abcdefgh"),
        *(o for objects in manifests.examples(SETTINGS, inference_image="public.ecr.aws/example/serve:1").values()
          for o in objects),
        *manifests.training_job(TRN1),
    ]


@pytest.mark.parametrize("obj", everything(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_validates_against_the_kubernetes_schema(obj: dict) -> None:
    valid(obj)


def test_the_validator_is_live_and_offline() -> None:
    job = manifests.training_job(ULTRA)[1]
    job["spec"]["template"]["spec"]["containers"][0]["resourcez"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        valid(job)
    del job["spec"]["template"]["spec"]["containers"][0]["resourcez"]
    job["spec"]["completions"] = "eight"
    with pytest.raises(kubernetes_validate.ValidationError):
        valid(job)


@pytest.mark.parametrize("name", ["fsx-static-pv.yaml", "fsx-static-claim.yaml"])
def test_the_publishers_own_examples_validate_too(name: str) -> None:
    valid(yaml.safe_load((DATA / name).read_text()))


def test_fsx_volume_has_the_publishers_shape() -> None:
    ours = manifests.fsx_volume(file_system_id="fs-1", dns_name="d", mount_name="m")
    theirs = [yaml.safe_load((DATA / n).read_text()) for n in ("fsx-static-pv.yaml", "fsx-static-claim.yaml")]
    assert ours[0]["spec"]["csi"].keys() == theirs[0]["spec"]["csi"].keys()
    assert ours[0]["spec"]["csi"]["driver"] == theirs[0]["spec"]["csi"]["driver"] == manifests.FSX_CSI_DRIVER
    assert ours[0]["spec"]["csi"]["volumeAttributes"].keys() == theirs[0]["spec"]["csi"]["volumeAttributes"].keys()
    assert ours[1]["spec"]["volumeName"] == ours[0]["metadata"]["name"]
    assert ours[1]["spec"]["storageClassName"] == theirs[1]["spec"]["storageClassName"] == ""


def test_training_job_takes_whole_ultraservers_with_every_device() -> None:
    service, job = manifests.training_job(ULTRA)
    spec = CATALOG.get("trn2u.48xlarge")
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 8
    assert job["spec"]["completionMode"] == "Indexed"
    pod = job["spec"]["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits == {NEURON_RESOURCE: str(spec.accelerators), EFA_RESOURCE: str(spec.efa_interfaces),
                      "cpu": str(int(spec.vcpus * 0.9)), "memory": f"{int(spec.memory_gib * 0.9)}Gi"} == {
        NEURON_RESOURCE: "16", EFA_RESOURCE: "16", "cpu": "172", "memory": "1843Gi"}
    assert pod["containers"][0]["resources"]["requests"] == limits  # Guaranteed QoS (issue 39)
    # it survives a drain or a lost node: retried per index, disruptions not counted (issue 39)
    assert job["spec"]["backoffLimitPerIndex"] == 2 and "backoffLimit" not in job["spec"]
    assert job["spec"]["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
    assert pod["tolerations"] == [{"key": NEURON_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["nodeSelector"]["neuronfleet/node-group"] == "ultra"
    # one pod per node, packed into UltraServers by Neuron's device plugin label
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == \
        "kubernetes.io/hostname"
    term = pod["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["topologyKey"] == "neuron.amazonaws.com/ultraserver-server-id-4"
    # no other UltraServer job on its UltraServers (Neuron's MPI guide's anti-affinity, by job name)
    other = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][1]
    assert other["topologyKey"] == "neuron.amazonaws.com/ultraserver-server-id-4"
    assert {"key": "neuronfleet/ultraserver-job", "operator": "NotIn", "values": ["train"]} in \
        other["labelSelector"]["matchExpressions"]
    assert job["spec"]["template"]["metadata"]["labels"]["neuronfleet/ultraserver-job"] == "train"
    # a trn1 job has neither
    trn1 = manifests.training_job(TRN1)[1]["spec"]["template"]["spec"]["affinity"]
    assert "podAffinity" not in trn1 and len(trn1["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]) == 1
    assert service["spec"]["clusterIP"] == "None" and pod["subdomain"] == service["metadata"]["name"]
    with pytest.raises(ValueError, match="nodes: got 6; allowed: a multiple of 4"):
        manifests.training_job(ULTRA, nodes=6)


def test_training_job_feeds_launch_py_its_rank_inputs(tmp_path) -> None:
    """The environment the Job gives each pod is the one launch.py orders ranks with on Batch: resolve it as the
    kubelet would for pod 5 of 8 and let launch.plan order eight UltraServer nodes (two UltraServers)."""
    _, job = manifests.training_job(ULTRA)
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["python3", f"{manifests.HOST_DIR}/launch.py"]
    env = {}
    for var in container["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            path = var["valueFrom"]["fieldRef"]["fieldPath"]
            env[var["name"]] = {"metadata.annotations['batch.kubernetes.io/job-completion-index']": "5",
                                "metadata.labels['batch.kubernetes.io/controller-uid']": "uid-1",
                                "status.podIP": "10.0.0.15"}[path]
    assert env["NEURONFLEET_ULTRASERVER_SIZE"] == "4" and env["NEURONFLEET_NPROC_PER_NODE"] == "64"
    records = [launch.NodeRecord(index=i, address=f"10.0.0.{10 + i}", server_id=f"{'ab'[i % 2]}" * 16,
                                 node_id=i // 2, modes=(1,)) for i in range(8)]
    cmd, extra = launch.plan(env, tmp_path, "10.0.0.15", ["train.py"], gather=lambda *a: records)
    assert "--nnodes=8" in cmd and "--nproc-per-node=64" in cmd
    # pod 5 is server b, node id 2 -> rank 6 (server a's four first, then b's by node id)
    assert "--node-rank=6" in cmd and extra["NEURON_RT_ULTRASERVER_NODE_ID"] == "2"


def test_inference_deployment_uses_the_scheduler_extension_for_part_of_a_node() -> None:
    cores = manifests.inference_deployment(INF2, image="i", neuron_cores=2)
    whole = manifests.inference_deployment(INF2, image="i")
    assert cores["spec"]["template"]["spec"]["schedulerName"] == manifests.NEURON_SCHEDULER
    assert "schedulerName" not in whole["spec"]["template"]["spec"]
    # cpu and memory: the pod's share of 90 % of the node's (inf2.xlarge: 4 vCPUs, 16 GiB), Guaranteed (issue 39)
    assert whole["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        NEURON_RESOURCE: "1", "cpu": "3", "memory": "14Gi"}
    half = manifests.inference_deployment(INF2, image="i", neuron_cores=1)["spec"]["template"]["spec"]
    assert half["containers"][0]["resources"]["requests"] == half["containers"][0]["resources"]["limits"] == {
        "aws.amazon.com/neuroncore": "1", "cpu": "1", "memory": "7Gi"}  # 1 of inf2.xlarge's 2 NeuronCores


def test_write_examples(tmp_path) -> None:
    paths = manifests.write_examples(SETTINGS, tmp_path, inference_image="public.ecr.aws/example/serve:1")
    assert sorted(p.name for p in paths) == ["inference.yaml", "node-scripts.yaml", "training-job.yaml"]
    for path in paths:
        for obj in yaml.safe_load_all(path.read_text()):
            valid(obj)
    scripts = yaml.safe_load((tmp_path / "node-scripts.yaml").read_text())
    assert scripts["data"]["launch.py"] == (Path(launch.__file__)).read_text()


def test_utilisation_config_unpacks_to_the_script() -> None:
    import base64
    import gzip

    config = manifests.utilisation_publisher([TRN1], namespace_metrics="N", region="us-east-2")[0]
    script = gzip.decompress(base64.b64decode(config["data"]["utilisation.py.gz.b64"])).decode()
    from neuronfleet.node import script_text

    assert script == script_text("utilisation.py")
    assert json.dumps(config).count("utilisation") >= 2


def test_the_daemonset_unpacks_a_publisher_that_runs_with_its_signer(tmp_path) -> None:
    """The container's own commands, run against the ConfigMap's files: utilisation.py finds sigv4.py beside it."""
    import subprocess
    import sys

    config, daemonset = manifests.utilisation_publisher([TRN1], namespace_metrics="N", region="us-east-2")[:2]
    assert set(config["data"]) == {"utilisation.py.gz.b64", "sigv4.py.gz.b64"}
    (tmp_path / "scripts").mkdir()
    for key, value in config["data"].items():
        (tmp_path / "scripts" / key).write_text(value)
    script = daemonset["spec"]["template"]["spec"]["containers"][0]["command"][2]
    unpack, _, run = script.rpartition("; ")
    assert run.startswith(f"{manifests.NEURON_MONITOR_BINARY} | python3 /tmp/neuronfleet/utilisation.py ")
    unpack = unpack.replace("/scripts/", f"{tmp_path}/scripts/").replace("/tmp/neuronfleet", f"{tmp_path}/nf")
    subprocess.run(["/bin/sh", "-c", unpack], check=True)
    out = subprocess.run([sys.executable, str(tmp_path / "nf" / "utilisation.py"), "--help"], capture_output=True,
                         text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "--namespace" in out.stdout


def _publisher(name: str) -> list[dict]:
    return [o for o in yaml.safe_load_all((DATA / name).read_text()) if o]


@pytest.mark.parametrize("name", ["neuron-dra-all-devices.yaml", "neuron-dra-4-node-inference-us.yaml"])
def test_neurons_own_dra_examples_validate(name: str) -> None:
    core = [o for o in _publisher(name) if o["apiVersion"] in ("v1", "resource.k8s.io/v1")]
    assert core and {o["kind"] for o in core} <= {"ResourceClaimTemplate", "Pod"}
    for obj in core:
        valid(obj)


def test_dra_node_groups_get_claims_as_neurons_examples_write_them() -> None:
    ultra = NeuronNodegroupSettings(name="ultra", instance_type="trn2u.48xlarge", count=4, dra=True,
                                    device_plugin=False, capacity=Capacity.capacity_block(resource_group_arn=BLOCKS))
    trn2 = NeuronNodegroupSettings(name="trn2", instance_type="trn2.48xlarge", count=2, dra=True, device_plugin=False)
    for group, example in ((ultra, "neuron-dra-4-node-inference-us.yaml"), (trn2, "neuron-dra-all-devices.yaml")):
        template, _, job = manifests.training_job(group)
        valid(template)
        theirs = next(o for o in _publisher(example) if o["kind"] == "ResourceClaimTemplate")
        assert template["spec"] == theirs["spec"]  # the publisher's claim, exactly
        pod = job["spec"]["template"]["spec"]
        assert pod["resourceClaims"] == [{"name": "neurons", "resourceClaimTemplateName": template["metadata"]["name"]}]
        resources = pod["containers"][0]["resources"]
        assert resources["claims"] == [{"name": "neurons"}]
        assert NEURON_RESOURCE not in resources["limits"]  # no device plugin on a DRA node group
        assert resources["limits"][EFA_RESOURCE] == "16"  # EFA still from its device plugin


# ------------------------------------------------------------------------------ identities and the privileged image


def test_training_and_serving_in_their_own_namespaces_with_their_own_accounts() -> None:
    """Training's objects in training's namespace with training's service account; serving's in serving's; both
    namespaces enforce the baseline Pod Security Standard (no privileged pod, host network or hostPath there)."""
    objects = everything()
    namespaced = {(o["kind"], o["metadata"]["name"]): o["metadata"].get("namespace") for o in objects}
    assert namespaced[("PersistentVolumeClaim", "fsx")] == manifests.TRAINING_NAMESPACE
    assert namespaced[("ConfigMap", manifests.SCRIPTS_CONFIGMAP)] == manifests.TRAINING_NAMESPACE
    assert namespaced[("Job", "train")] == manifests.TRAINING_NAMESPACE
    assert namespaced[("Deployment", "serve")] == manifests.SERVING_NAMESPACE
    pods = {o["kind"]: o["spec"]["template"]["spec"] for o in objects if o["kind"] in ("Job", "Deployment")}
    assert pods["Job"]["serviceAccountName"] == manifests.TRAINING_SERVICE_ACCOUNT
    assert pods["Deployment"]["serviceAccountName"] == manifests.SERVING_SERVICE_ACCOUNT
    for namespace in manifests.namespaces():
        assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert {n["metadata"]["name"] for n in manifests.namespaces()} == {manifests.TRAINING_NAMESPACE,
                                                                       manifests.SERVING_NAMESPACE}
    # nothing privileged in either (the baseline would refuse it): only the publisher, in kube-system
    for o in objects:
        spec = o.get("spec", {}).get("template", {}).get("spec", {})
        if o["metadata"].get("namespace") in (manifests.TRAINING_NAMESPACE, manifests.SERVING_NAMESPACE):
            assert not spec.get("hostNetwork") and not any(
                c.get("securityContext", {}).get("privileged") for c in spec.get("containers", []))


def test_the_privileged_publisher_image() -> None:
    """By the kit's pin (a tag: no digest is published offline, pins.NEURON_MONITOR_DIGEST says so) or by a digest
    reference the user gives; a tag given by the user is refused; the publisher mounts no API token."""
    from neuronfleet.facts import eks_pins as pins

    [daemonset] = [o for o in manifests.utilisation_publisher([TRN1], namespace_metrics="N", region="us-east-2")
                   if o["kind"] == "DaemonSet"]
    spec = daemonset["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == (
        f"{pins.NEURON_MONITOR_IMAGE}@{pins.NEURON_MONITOR_DIGEST}" if pins.NEURON_MONITOR_DIGEST
        else pins.NEURON_MONITOR_IMAGE)
    assert spec["automountServiceAccountToken"] is False
    pinned = "public.ecr.aws/neuron/neuron-monitor:1.3.0@sha256:" + "0" * 64
    [daemonset] = [o for o in manifests.utilisation_publisher([TRN1], namespace_metrics="N", region="us-east-2",
                                                              image=pinned) if o["kind"] == "DaemonSet"]
    assert daemonset["spec"]["template"]["spec"]["containers"][0]["image"] == pinned
    for bad in ("public.ecr.aws/neuron/neuron-monitor:1.3.0", "public.ecr.aws/neuron/neuron-monitor@sha256:abc",
                "public.ecr.aws/neuron/neuron-monitor:latest@sha256:" + "G" * 64):
        with pytest.raises(ValueError, match=r"monitor_image: got .*allowed: a reference pinned by digest"):
            manifests.monitor_image(bad)

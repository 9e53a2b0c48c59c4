"""The training rows of docs/checks.md as checks: AWS Batch, the node scripts, the instances.

The judges (``instances_in_block``, ...) are pure: each takes what :mod:`neuronfleet.verify.reads` read (boto3's
answers as they come) and the time of the run, and is tested on the AWS CLI's own example answer of its operation
(tests/data/aws_cli) and on variations of it (tests/unit/test_verify.py). The ``_run_*`` functions only read and
judge; :data:`CHECKS` lists the rows in the document's order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from neuronfleet_contract.namespaces import NEURON_CORE_UTILIZATION, NEURON_NAMESPACE
from neuronfleet_contract.tags import CAPACITY_TAG, DEVICES_TAG, DRA_DEVICES

from ..node.fetch import PREFIX as FETCH_PREFIX
from ..preflight.checks import Failed
from . import applies
from .outcomes import Finding, broken, holds, not_yet
from .registry import Check, Context, unreadable

SETTLE = timedelta(minutes=15)
"""How long an instance runs before its console output, its metrics and its jobs are read as evidence: the node
scripts' fetch retries for at most a few minutes and the utilisation publisher's first point follows its first
minute (node/fetch.py, node/utilisation.py); 15 minutes leaves room for a slow boot. An instance younger than this
gives ``not yet``, never ``broken``."""

NODE_SCRIPTS = "/opt/neuronfleet"
"""Where the node scripts are fetched to (node/fetch.py ``--dest`` in the launch template's user data)."""


def _ran_long_enough(instances: Sequence[Mapping[str, Any]], now: datetime) -> list[Mapping[str, Any]]:
    return [i for i in instances if now - i["LaunchTime"] >= SETTLE]


def _ids(instances: Sequence[Mapping[str, Any]], most: int = 3) -> str:
    ids = [str(i.get("InstanceId")) for i in instances]
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def instances_in_block(instances: Sequence[Mapping[str, Any]]) -> Finding:
    """``batch-capacity-block``: the fleet's running instances tagged ``neuronfleet:capacity=capacity-block`` run in a
    Capacity Block: EC2 shows a ``CapacityReservationId`` (and ``InstanceLifecycle: capacity-block``) on each."""
    if not instances:
        return not_yet("no running instance of the fleet is tagged neuronfleet:capacity=capacity-block",
                       "run again while a Capacity Block cluster has a job running (Batch launches its instances "
                       "only for jobs, inside the block's window)")
    outside = [i for i in instances if not str(i.get("CapacityReservationId") or "").startswith("cr-")
               or i.get("InstanceLifecycle") != "capacity-block"]
    if outside:
        return broken(f"{len(outside)} of {len(instances)} instances launched for a Capacity Block run outside it "
                      f"({_ids(outside)}: no capacity reservation, or InstanceLifecycle "
                      f"{outside[0].get('InstanceLifecycle')!r})",
                      "they bill On-Demand and the waste detector announces off-reservation: AWS Batch did not "
                      "apply the launch template's capacity-block market options. Stop the cluster's jobs, open a "
                      "support case with the compute environment's ARN, and train on the ODCR or on-demand path "
                      "meanwhile (docs/capacity-blocks.md)")
    blocks = sorted({str(i.get("CapacityBlockId") or i["CapacityReservationId"]) for i in instances})
    return holds(f"{len(instances)} instances run in Capacity Block {', '.join(blocks)}")


def compute_environments_valid(environments: Sequence[Mapping[str, Any]]) -> Finding:
    """``batch-compute-environment``: AWS Batch accepted the fleet's compute environments (the security group beside a
    launch template with network interfaces): every one is ``VALID``."""
    if not environments:
        return not_yet("no AWS Batch compute environment carries the fleet's tag",
                       "run again after the training stacks are deployed (cdk deploy <fleet>-train-*)")
    pending = [e for e in environments if e.get("status") in ("CREATING", "UPDATING")]
    invalid = [e for e in environments if e.get("status") == "INVALID"]
    if invalid:
        first = invalid[0]
        return broken(f"{first.get('computeEnvironmentName')} is INVALID: {first.get('statusReason') or 'no reason given'}"
                      + (f" (and {len(invalid) - 1} more)" if len(invalid) > 1 else ""),
                      "no job of the cluster can start. Read the reason: a security group or launch template "
                      "refusal means Batch does not take the group beside interfaces; then redeploy with the "
                      "cluster's network settings changed (docs/training.md)")
    if pending:
        return not_yet(f"{_names(pending)} still {pending[0].get('status')}", "run again in a few minutes")
    return holds(f"{len(environments)} compute environments VALID ({_names(environments)})")


def _names(environments: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(str(e.get("computeEnvironmentName")) for e in environments)


def utilisation_published(metrics: Sequence[Mapping[str, Any]], instances: Sequence[Mapping[str, Any]],
                          now: datetime, *, namespace: str, metric: str) -> Finding:
    """``utilisation-metric``: CloudWatch accepts the utilisation publisher's PutMetricData: ``metric`` lists a series
    for each of the fleet's Neuron instances that has run long enough. An EKS node whose group uses Neuron's DRA driver
    (tagged ``neuronfleet:neuron-devices=dra``) runs no publisher by design (Neuron Monitor does not support the DRA
    driver): it is counted apart, as the waste detector does, never as broken."""
    dra = [i for i in instances if _tag(i, DEVICES_TAG) == DRA_DEVICES]
    instances = [i for i in instances if _tag(i, DEVICES_TAG) != DRA_DEVICES]
    apart = f"; {len(dra)} DRA node(s) not measured, by design (Neuron Monitor does not support the DRA driver)" \
        if dra else ""
    if not instances:
        return not_yet(f"no Neuron instance of the fleet that runs the publisher is running{apart}",
                       "run again while a training job runs")
    settled = _ran_long_enough(instances, now)
    if not settled:
        return not_yet(f"{len(instances)} Neuron instances running, none for {SETTLE.seconds // 60} minutes yet",
                       f"run again {SETTLE.seconds // 60} minutes after the first one started")
    published = {d.get("Value") for m in metrics if m.get("Namespace") == namespace and m.get("MetricName") == metric
                 for d in m.get("Dimensions", ()) if d.get("Name") == "InstanceId"}
    silent = [i for i in settled if i["InstanceId"] not in published]
    if silent:
        return broken(f"{len(silent)} of {len(settled)} Neuron instances have no {namespace} {metric} series "
                      f"({_ids(silent)})",
                      "the waste detector reads them as silent-instance. Read the publisher's log on one of them "
                      "(journalctl -u neuronfleet-utilisation): an HTTP 4xx from CloudWatch means it refuses the "
                      "publisher's request; report it with the line")
    return holds(f"{len(settled)} Neuron instances publish {metric}{apart}")


def fetch_lines(console: str) -> list[str]:
    """The node-script fetcher's lines in an instance's console output (``neuronfleet fetch: ...``)."""
    return [line.strip() for line in console.splitlines() if line.strip().startswith(f"{FETCH_PREFIX}:")]


def node_scripts_fetched(consoles: Mapping[str, str], instances: Sequence[Mapping[str, Any]], now: datetime, *,
                         part_ran: bool) -> Finding:
    """``node-fetch`` (``part_ran=False``): S3 accepts the fetcher's signed GetObject: each instance's console shows
    the fetch's success line (``-> /opt/neuronfleet: ...``). ``node-user-data`` (``part_ran=True``): AWS Batch runs
    the launch template's plain-text shell part: the console shows any fetch line at all."""
    settled = _ran_long_enough(instances, now)
    if not settled:
        return not_yet(f"{len(instances)} training instances running, none for {SETTLE.seconds // 60} minutes"
                       if instances else "no training instance of the fleet is running",
                       "run again while a training job runs")
    read = [i for i in settled if i["InstanceId"] in consoles]
    if not read:
        return not_yet("no console output yet for the fleet's training instances (EC2 keeps it from boot)",
                       "run again in a few minutes")
    lines = {i["InstanceId"]: fetch_lines(consoles[i["InstanceId"]]) for i in read}
    if part_ran:
        none = [i for i in read if not lines[i["InstanceId"]]]
        if none:
            return broken(f"no '{FETCH_PREFIX}' line in the console output of {_ids(none)}",
                          "the launch template's shell part did not run: the node has no /opt/neuronfleet and every "
                          "job fails at python3 /opt/neuronfleet/launch.py. Report the launch template's user data "
                          "and the console output")
        return holds(f"the user data's shell part ran on {len(read)} instances")
    failed = {k: v for k, v in lines.items() if v and not any(f"-> {NODE_SCRIPTS}:" in line for line in v)}
    if failed:
        instance, said = next(iter(failed.items()))
        return broken(f"{instance}: {said[-1]}", "the fetcher's GetObject was refused: the node never joins. A 403 "
                      "naming SignatureDoesNotMatch is the kit's signer: report the line; AccessDenied is the "
                      "instance role or the bucket policy (docs/training.md)")
    quiet = [i for i in read if not lines[i["InstanceId"]]]
    if len(quiet) == len(read):
        return not_yet(f"no '{FETCH_PREFIX}' line yet on {_ids(read)}", "run again in a few minutes; if it stays "
                       "so, check node-user-data")
    return holds(f"the node scripts reached {NODE_SCRIPTS} on {len(read) - len(quiet)} instances")


def capacity_of(instance: Mapping[str, Any]) -> str:
    """The ``neuronfleet:capacity`` tag of an instance (TrainiumCluster sets it), or ''."""
    return _tag(instance, CAPACITY_TAG)


def _tag(instance: Mapping[str, Any], key: str) -> str:
    return next((str(t.get("Value")) for t in instance.get("Tags", ()) if t.get("Key") == key), "")


# ------------------------------------------------------------------------------------------------ the checks





def _run_block(context: Context) -> Finding:
    found = context.reads.instances([{"Name": f"tag:{CAPACITY_TAG}", "Values": ["capacity-block"]}])
    return unreadable(found, BATCH_CAPACITY_BLOCK) if isinstance(found, Failed) else instances_in_block(found)


def _run_environments(context: Context) -> Finding:
    found = context.reads.compute_environments()
    return unreadable(found, BATCH_COMPUTE_ENVIRONMENT) if isinstance(found, Failed) else \
        compute_environments_valid(found)


def _neuron_instances(context: Context) -> list[dict[str, Any]] | Failed:
    found = context.reads.instances()
    if isinstance(found, Failed):
        return found
    return [i for i in found if capacity_of(i)]  # TrainiumCluster tags every instance it launches with its capacity


def _run_utilisation(context: Context) -> Finding:
    instances = _neuron_instances(context)
    if isinstance(instances, Failed):
        return unreadable(instances, UTILISATION_METRIC)
    metrics = context.reads.metrics(NEURON_NAMESPACE, UTILISATION)
    if isinstance(metrics, Failed):
        return unreadable(metrics, UTILISATION_METRIC)
    return utilisation_published(metrics, instances, context.now, namespace=NEURON_NAMESPACE, metric=UTILISATION)


CONSOLES = 3
"""Console outputs read per run (the oldest instances first): enough to see a pattern, few calls."""


def _consoles(context: Context, check: Check) -> tuple[list[dict[str, Any]], dict[str, str]] | Finding:
    instances = _neuron_instances(context)
    if isinstance(instances, Failed):
        return unreadable(instances, check)
    consoles: dict[str, str] = {}
    for instance in sorted(_ran_long_enough(instances, context.now), key=lambda i: i["LaunchTime"])[:CONSOLES]:
        text = context.reads.console_output(instance["InstanceId"])
        if isinstance(text, Failed):
            return unreadable(text, check)
        if text:
            consoles[instance["InstanceId"]] = text
    return instances, consoles


def _run_fetch(context: Context, check_id: str, part_ran: bool) -> Finding:
    read = _consoles(context, next(c for c in CHECKS if c.id == check_id))
    if isinstance(read, Finding):
        return read
    instances, consoles = read
    return node_scripts_fetched(consoles, instances, context.now, part_ran=part_ran)


UTILISATION = NEURON_CORE_UTILIZATION


def moves_to(function: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(GPU queue ARN, GPU job definition revision ARNs) a lifecycle function moves held jobs to: its environment's
    ``GPU_QUEUE_ARN`` and ``GPU_JOB_DEFINITIONS`` (the contract's names: neuronfleet_contract.capacity_lifecycle),
    what its role was granted SubmitJob on."""
    variables = (function.get("Environment") or {}).get("Variables") or {}
    try:
        definitions = json.loads(variables.get("GPU_JOB_DEFINITIONS") or "[]")
    except ValueError as exc:
        raise ValueError(f"GPU_JOB_DEFINITIONS: got {variables.get('GPU_JOB_DEFINITIONS')!r}; allowed: a JSON list "
                         "of job definition ARNs") from exc
    return str(variables.get("GPU_QUEUE_ARN") or ""), [str(d) for d in definitions]


def another_definition(definition: str) -> str:
    """A job definition ARN of the same account that is none of the fleet's (the role must not submit it)."""
    return definition.rsplit("/", 1)[0] + "/neuronfleet-verify-not-the-pools:1"




def _run_gpu_move(context: Context) -> Finding:
    from .roles import LIFECYCLE_HANDLER, bound_right, deployed

    found = deployed(context.reads, LIFECYCLE_HANDLER, context.fleet.stack_name("capacity"), GPU_MOVE_SUBMIT)
    if isinstance(found, Finding):
        return found
    finding = not_yet("no lifecycle function names a GPU queue", "run again after the capacity stack is deployed")
    for function in found:
        queue, definitions = moves_to(function)
        if not queue or not definitions:
            continue
        results: dict[str, list[dict[str, Any]]] = {}
        for arn in (queue, *definitions, another_definition(definitions[0])):
            answer = context.reads.simulate(str(function["Role"]), ["batch:SubmitJob"], [arn], {})
            if isinstance(answer, Failed):
                return unreadable(answer, GPU_MOVE_SUBMIT)
            results[arn] = answer
        other = results.pop(another_definition(definitions[0]))
        finding = bound_right([r for v in results.values() for r in v], other, role=str(function["Role"]),
                              right="fallback/gpu_pool.py's grant_submit_jobs",
                              breaks="every move to the GPU pool is refused by Batch (announced as 'Batch refused "
                                     "the resubmission: ... AccessDenied'); the held job stays",
                              widens="the lifecycle role may submit a job definition that is not the pool's")
        if finding.outcome != "holds":
            return finding
    if finding.outcome == "holds":
        return holds(f"{finding.seen} (whether Batch asks for job/* too shows only in a real move: its announcement "
                     "says 'moved')")
    return finding

BATCH_CAPACITY_BLOCK = Check(
    "batch-capacity-block", "AWS Batch launches into a Capacity Block through the launch template",
    "aws ec2 describe-instances --filters Name=tag:neuronfleet:capacity,Values=capacity-block --query "
    "'Reservations[].Instances[].[InstanceId,CapacityReservationId,InstanceLifecycle]'",
    run=_run_block, permission="ec2:DescribeInstances", applies=applies.batch_blocks)
NEURON_DRIVER = Check(
    "neuron-driver", "the pinned ECS Neuron AMI carries Neuron driver 2.30",
    "cat /sys/module/neuron/version on one training instance",
    manual="it needs a shell on an instance", applies=applies.batch)
TRAINING_IMAGE = Check(
    "training-image", "the trn2/trn2u default training image exists",
    "docker manifest inspect <the image reference synth prints>",
    manual="the image lives in Neuron's public registry, outside the account", applies=applies.batch_default_image)
MNP_INTERFACE_CARD = Check(
    "mnp-interface-card", "ECS places a multi-node task's interface on a card with a free slot",
    "the first 2-node job reaches RUNNING; aws ec2 describe-network-interfaces --filters "
    "Name=attachment.instance-id,Values=<id>",
    manual="it needs a multi-node job to run (a change)", applies=applies.batch_multinode)
BATCH_COMPUTE_ENVIRONMENT = Check(
    "batch-compute-environment", "Batch takes the compute environment's security group beside a launch template "
    "with interfaces", "aws batch describe-compute-environments shows VALID",
    run=_run_environments, permission="batch:DescribeComputeEnvironments", applies=applies.batch)
UTILISATION_METRIC = Check(
    "utilisation-metric", "CloudWatch accepts the utilisation publisher's PutMetricData",
    "aws cloudwatch list-metrics --namespace NeuronFleet/Neuron lists NeuronCoreUtilization for the instance within "
    "minutes", run=_run_utilisation, permission="ec2:DescribeInstances, cloudwatch:ListMetrics")
NODE_FETCH = Check(
    "node-fetch", "S3 accepts the node-script fetcher's signed GetObject",
    "aws ec2 get-console-output --instance-id <id> --latest --output text | grep 'neuronfleet fetch'",
    run=lambda c: _run_fetch(c, "node-fetch", part_ran=False), permission="ec2:DescribeInstances, "
    "ec2:GetConsoleOutput", applies=applies.batch)
NODE_USER_DATA = Check(
    "node-user-data", "AWS Batch runs the launch template's plain-text shell part",
    "the same console-output line as node-fetch (aws ec2 get-console-output --instance-id <id> --latest --output "
    "text | grep 'neuronfleet fetch'); none at all means the part did not run",
    run=lambda c: _run_fetch(c, "node-user-data", part_ran=True),
    permission="ec2:DescribeInstances, ec2:GetConsoleOutput", applies=applies.batch)
JOB_IMDS_BLOCKED = Check(
    "job-imds-blocked", "job containers cannot reach the instance role",
    "inside a running multi-node job: curl -X PUT http://169.254.169.254/latest/api/token -H "
    "'X-aws-ec2-metadata-token-ttl-seconds: 60' times out and aws sts get-caller-identity names the job role",
    manual="it runs inside a job's container", applies=applies.batch)
AL2023_REPOS = Check(
    "al2023-repos", "Amazon Linux 2023 packages come from buckets named al2023-repos-<region>-*",
    "dnf repolist -v on a host shows baseurl under al2023-repos-<region>-", manual="it needs a shell on a host",
    applies=applies.batch)
SESSION_MANAGER = Check(
    "session-manager", "the Session Manager set (5 actions) is all the SSM Agent needs on a Batch host",
    "aws ssm start-session --target <instance-id>", manual="it opens a session on a host", applies=applies.batch)
DRAIN_FLAGS_READ_ONLY = Check(
    "drain-flags-read-only", "a Batch job sees the drain flags' directory read-only over its read-write /fsx",
    "in a running job: touch /fsx/data/neuronfleet/drain/x fails with 'Read-only file system' and touch /fsx/data/x "
    "succeeds", manual="it runs inside a job's container", applies=applies.batch)
GPU_MOVE_SUBMIT = Check(
    "gpu-move-submit", "the GPU-queue move's batch:SubmitJob on the queue and the job definitions' revision ARNs, "
    "without job/*",
    "aws iam simulate-principal-policy --policy-source-arn <lifecycle role ARN> --action-names batch:SubmitJob "
    "--resource-arns <GPU queue ARN> <the pool's job definition ARN with revision>",
    run=lambda c: _run_gpu_move(c), permission="tag:GetResources, lambda:ListFunctions, iam:SimulatePrincipalPolicy",
    applies=applies.gpu_move)
ONE_NODE_MNP = Check(
    "one-node-mnp-awsvpc", "a one-node multi-node parallel job runs on the GPU pool in awsvpc without IMDS",
    "aws batch submit-job --job-queue <GPU queue> --job-definition <its ARN>; inside it, the IMDSv2 token request "
    "times out", manual="it submits a job (a change)", applies=applies.gpu_pool)

CHECKS: tuple[Check, ...] = (BATCH_CAPACITY_BLOCK, NEURON_DRIVER, TRAINING_IMAGE, MNP_INTERFACE_CARD,
                             BATCH_COMPUTE_ENVIRONMENT, UTILISATION_METRIC, NODE_FETCH, NODE_USER_DATA, JOB_IMDS_BLOCKED,
                             AL2023_REPOS, SESSION_MANAGER, DRAIN_FLAGS_READ_ONLY, GPU_MOVE_SUBMIT, ONE_NODE_MNP)

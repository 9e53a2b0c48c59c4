"""The inference rows of docs/checks.md as checks: the serving containers, the judge, SageMaker's deployments.

The fleet's endpoints are the SageMaker endpoints carrying the fleet's tag (Resource Groups Tagging API), read with
DescribeEndpoint; the failover's role and the hub copier's log group are their functions' own (found by Handler:
:mod:`neuronfleet.verify.roles` says why). The judges are pure and tested on the AWS CLI's example answers where it has
one (get-metric-statistics, describe-scalable-targets, simulate-principal-policy); SageMaker's DescribeEndpoint and
DescribeModel and CloudWatch Logs' FilterLogEvents have none, their fixtures are built from botocore's shapes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from neuronfleet_contract.variants import GPU_VARIANT

from ..preflight.checks import Failed
from . import applies
from .outcomes import Finding, broken, holds, not_yet, unchecked
from .registry import VERIFY_AGAIN, Check, Context, unreadable
from .roles import COPIER_HANDLER, FAILOVER_HANDLER, bound_right, deployed, no_function, simulate_pair, with_handler

FAILOVER_TAG = "neuronfleet:failover"
SAGEMAKER_NAMESPACE = "sagemaker"
VARIANT_INSTANCES = "sagemaker:variant:DesiredInstanceCount"
"""inference/scaling_iam.py's tag, namespace and dimension of the failover's RegisterScalableTarget right, repeated
here so that verify (a command-line module) does not load aws-cdk-lib; tests/unit/test_verify_checks.py reads that
module's source and holds the values equal."""

ROLE_WORDS = ("role", "assume", "accessdenied", "access denied", "not authorized", "permission")
"""Words of a FailureReason that name the execution role (SageMaker's reasons are free text: e.g. "The execution role
ARN ... is invalid" or "... could not assume role ..."); matched case-insensitively."""


def endpoints_in_service(endpoints: Sequence[Mapping[str, Any]]) -> Finding:
    """``execution-role-source-arn``: SageMaker assumes the endpoints' execution roles (whose trust requires
    aws:SourceArn): every endpoint reaches InService; one Failed with a reason naming the role is broken."""
    if not endpoints:
        return not_yet("no SageMaker endpoint carries the fleet's tag",
                       "run again after the inference stacks are deployed")
    failed = [e for e in endpoints if e.get("EndpointStatus") == "Failed"]
    by_role = [e for e in failed if any(w in str(e.get("FailureReason") or "").lower() for w in ROLE_WORDS)]
    if by_role:
        first = by_role[0]
        return broken(f"{first.get('EndpointName')} Failed: {first.get('FailureReason')}",
                      "SageMaker could not use the execution role: if the reason names the trust or AssumeRole, "
                      "SageMaker does not send aws:SourceArn as the role's trust requires. Report it with this line; "
                      "meanwhile the trust's aws:SourceArn condition can be removed from the role by hand")
    if failed:
        first = failed[0]
        return unchecked(f"{first.get('EndpointName')} Failed for a reason that names no role: "
                         f"{first.get('FailureReason') or 'none given'}",
                         "fix that failure (docs/inference.md), redeploy and run neuronfleet verify again")
    waiting = [e for e in endpoints if e.get("EndpointStatus") != "InService"]
    if waiting:
        return not_yet(f"{waiting[0].get('EndpointName')} is {waiting[0].get('EndpointStatus')}",
                       "run again when the deploy finished (an endpoint takes 10 to 30 minutes)")
    return holds(f"{len(endpoints)} endpoints InService: SageMaker assumed their execution roles "
                 f"({', '.join(str(e.get('EndpointName')) for e in endpoints)})")


def total(datapoints: Sequence[Mapping[str, Any]], statistic: str = "Sum") -> float:
    """The sum of one statistic over GetMetricStatistics' datapoints (a point without it counts 0)."""
    return float(sum(float(p.get(statistic) or 0) for p in datapoints))


SHARE_HOLDS = 0.95
"""The least share of an endpoint's requests copied to its shadow that reads as "every request" (the pilot demo's
assumption); hourly sums of two metrics published separately differ a little at the day's edges."""


def shadow_share(counts: Mapping[str, tuple[float, float]]) -> Finding:
    """``shadow-sampling``: endpoint -> (production variant's Invocations, shadow variant's) over a day. The share
    is the second over the first; at least :data:`SHARE_HOLDS` holds (every request copied, as the pilot demo
    assumes)."""
    measured = {k: v for k, v in counts.items() if v[0] > 0}
    if not measured:
        return not_yet("no request reached a shadowed endpoint in the last day" if counts else
                       "no endpoint of the fleet has a shadow variant deployed",
                       "run again after a day with traffic")
    shares = {k: shadow / live for k, (live, shadow) in measured.items()}
    text = "; ".join(f"{k}: {shares[k]:.0%} of {measured[k][0]:,.0f} requests copied" for k in measured)
    low = [k for k, share in shares.items() if share < SHARE_HOLDS]
    if low:
        return broken(text, "SageMaker copies only this share to the shadow variant: the report's figures are "
                            "unaffected (a shadow's cost per million is over its own Invocations), but the pilot "
                            "demo and the judge's sample assume every request: read docs/judge.md's sample size "
                            "with this share")
    return holds(text)


def copier_lines(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The hub copier's ``copied`` records (Powertools JSON lines: message, s3_uri, files, bytes) among log events."""
    out = []
    for event in events:
        try:
            record = json.loads(str(event.get("message") or ""))
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("message") == "copied":
            out.append(record)
    return out


def _environment(model: Mapping[str, Any]) -> dict[str, str]:
    containers = [model.get("PrimaryContainer") or {}, *(model.get("Containers") or [])]
    return {k: v for c in containers for k, v in (c.get("Environment") or {}).items()}


def _from_prefix(model: Mapping[str, Any]) -> bool:
    containers = [model.get("PrimaryContainer") or {}, *(model.get("Containers") or [])]
    sources = [(c.get("ModelDataSource") or {}).get("S3DataSource") or {} for c in containers]
    return any(s.get("S3DataType") == "S3Prefix" and s.get("CompressionType") == "None" for s in sources)


def hub_copies(copied: Sequence[Mapping[str, Any]], models: Sequence[Mapping[str, Any]]) -> Finding:
    """``hub-copy``: the copier's ``copied`` records and the endpoints' models (DescribeModel). Holds when a model
    serves from an S3 prefix uncompressed and no model carries HF_TOKEN; a token in a model, or a copy no model
    serves from, is broken."""
    token = [m for m in models if "HF_TOKEN" in _environment(m)]
    if token:
        return broken(f"{token[0].get('ModelName')} carries HF_TOKEN in its environment",
                      "DescribeModel shows the Hugging Face token to whoever may describe models: redeploy with "
                      "the endpoint's hf_token_secret_arn (the copy serves the model without it) and rotate the token")
    staged = [m for m in models if _from_prefix(m)]
    done = "; ".join(f"{c.get('s3_uri')}: {int(c.get('bytes') or 0):,} bytes, {c.get('files')} files"
                     for c in copied[:3])
    if staged:
        return holds(f"{', '.join(str(m.get('ModelName')) for m in staged)} served from an S3 prefix "
                     "(uncompressed), no HF_TOKEN" + (f"; copied {done}" if copied else
                                                      "; the copier's 'copied' line is no longer in its log "
                                                      "(kept a month)"))
    if copied:
        return broken(f"the copier copied ({done}) but no model of the fleet serves from an S3 prefix",
                      "the GPU model does not read the copy: report it with DescribeModel's answer")
    return not_yet("no copy logged and no model served from a copy yet",
                   "run again after the deploy that copies the gated model (up to an hour)")


# ------------------------------------------------------------------------------------------------ the checks









def _run_in_service(context: Context) -> Finding:
    found = context.reads.endpoints()
    return unreadable(found, EXECUTION_ROLE_SOURCE) if isinstance(found, Failed) else endpoints_in_service(found)


DAY = timedelta(days=1)


def _run_sampling(context: Context) -> Finding:
    endpoints = context.reads.endpoints()
    if isinstance(endpoints, Failed):
        return unreadable(endpoints, SHADOW_SAMPLING)
    counts: dict[str, tuple[float, float]] = {}
    for endpoint in endpoints:
        shadows = [v["VariantName"] for v in endpoint.get("ShadowProductionVariants") or ()]
        live = [v["VariantName"] for v in endpoint.get("ProductionVariants") or ()]
        if not shadows or not live:
            continue
        sums = []
        for variant in (live[0], shadows[0]):
            points = context.reads.metric_sum("AWS/SageMaker", "Invocations", {
                "EndpointName": endpoint["EndpointName"], "VariantName": variant}, context.now - DAY, context.now)
            if isinstance(points, Failed):
                return unreadable(points, SHADOW_SAMPLING)
            sums.append(total(points))
        counts[str(endpoint["EndpointName"])] = (sums[0], sums[1])
    return shadow_share(counts)


def _models(context: Context, endpoints: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | Failed:
    out = []
    for endpoint in endpoints:
        config = context.reads.endpoint_config(str(endpoint.get("EndpointConfigName")))
        if isinstance(config, Failed):
            return config
        for variant in [*(config.get("ProductionVariants") or ()), *(config.get("ShadowProductionVariants") or ())]:
            model = context.reads.model(str(variant.get("ModelName")))
            if isinstance(model, Failed):
                return model
            out.append(model)
    return out


COPY_LOGS = timedelta(days=30)
"""How far back the copier's log is read: FleetFunction keeps a function's log a month."""


def _run_hub_copy(context: Context) -> Finding:
    functions = context.reads.functions()
    if isinstance(functions, Failed):
        return unreadable(functions, HUB_COPY)
    copiers = with_handler(functions, COPIER_HANDLER)
    copied: list[dict[str, Any]] = []
    for copier in copiers:
        group = (copier.get("LoggingConfig") or {}).get("LogGroup") or f"/aws/lambda/{copier['FunctionName']}"
        events = context.reads.log_events(group, '"copied"', context.now - COPY_LOGS)
        if isinstance(events, Failed) and events.cause != "not found":
            return unreadable(events, HUB_COPY)
        copied += copier_lines(events) if not isinstance(events, Failed) else []
    endpoints = context.reads.endpoints()
    if isinstance(endpoints, Failed):
        return unreadable(endpoints, HUB_COPY)
    models = _models(context, endpoints)
    if isinstance(models, Failed):
        return unreadable(models, HUB_COPY)
    if not copiers and not models:
        return no_function(COPIER_HANDLER, "the inference stack")
    return hub_copies(copied, models)


def fleet_targets(targets: Sequence[Mapping[str, Any]], endpoint_names: Sequence[str]) -> list[Mapping[str, Any]]:
    """The scalable targets of the fleet's endpoints' GPU variants (ResourceId ``endpoint/<name>/variant/gpu``), the
    targets the failover raises."""
    wanted = {f"endpoint/{n}/variant/{GPU_VARIANT}" for n in endpoint_names}
    return [t for t in targets if t.get("ResourceId") in wanted and t.get("ScalableTargetARN")]


def _run_scalable_target(context: Context) -> Finding:
    failovers = deployed(context.reads, FAILOVER_HANDLER, "the inference stack", SCALABLE_TARGET_RIGHT)
    if isinstance(failovers, Finding):
        return failovers
    names = context.reads.tagged("sagemaker:endpoint")
    targets = context.reads.scalable_targets()
    for answer in (names, targets):
        if isinstance(answer, Failed):
            return unreadable(answer, SCALABLE_TARGET_RIGHT)
    ours = fleet_targets(targets, [n.rsplit("/", 1)[-1] for n in names])
    if not ours:
        return not_yet("no scalable target of the fleet's endpoints' GPU variants is registered",
                       "run again after the inference stacks are deployed")
    target = ours[0]
    tags = context.reads.target_tags(str(target["ScalableTargetARN"]))
    if isinstance(tags, Failed):
        return unreadable(tags, SCALABLE_TARGET_RIGHT)
    value = tags.get(FAILOVER_TAG)
    if not value:
        return broken(f"{target['ResourceId']}'s scalable target carries no {FAILOVER_TAG} tag",
                      "the failover may change only targets tagged as its own: it cannot raise this variant's floor "
                      "(AccessDenied, FailoverErrors). Redeploy the inference stack (NeuronEndpoint tags the target)")
    key = f"aws:ResourceTag/{FAILOVER_TAG}"
    base = {"application-autoscaling:service-namespace": SAGEMAKER_NAMESPACE,
            "application-autoscaling:scalable-dimension": VARIANT_INSTANCES}
    finding = not_yet("no failover function simulated", VERIFY_AGAIN)
    for failover in failovers:
        pair = simulate_pair(context.reads, str(failover["Role"]), ["application-autoscaling:RegisterScalableTarget"],
                             str(target["ScalableTargetARN"]), {**base, key: value}, {**base, key: value + "-other"})
        if isinstance(pair, Failed):
            return unreadable(pair, SCALABLE_TARGET_RIGHT)
        finding = bound_right(*pair, role=str(failover["Role"]), right="inference/scaling_iam.py's "
                              "variant_bounds_statement", breaks="the failover cannot raise the GPU variant's floor "
                              "(AccessDenied in its log, FailoverErrors)",
                              widens="the failover may change a scalable target that is not its own")
        if finding.outcome == "holds":
            return finding
    return finding


INVOKES = "it invokes the endpoint (a billed request)"

OPTIMUM_CACHE = Check(
    "optimum-cache", "optimum-neuron's public cache holds the example models' shapes; the pinned revisions exist",
    "optimum-cli neuron cache lookup <model>; huggingface_hub.HfApi().model_info(<model>, revision=<sha>)",
    manual="it reads the Hugging Face Hub, outside the account", applies=applies.endpoints)
INVOCATIONS_SHAPE = Check(
    "invocations-shape", "vLLM's /invocations on SageMaker answers a completion in OpenAI's shape",
    "aws sagemaker-runtime invoke-endpoint --endpoint-name <name> --target-variant neuron --content-type "
    "application/json --cli-binary-format raw-in-base64-out --body "
    "'{\"prompt\":\"Say this is a test\",\"max_tokens\":7,\"temperature\":0,\"logprobs\":1}' out.json", manual=INVOKES,
    applies=applies.judged)
JUDGE_TRANSIENT = Check(
    "judge-transient-codes", "the pilot judge takes a container's 429 or 503 as transient",
    "during a load test, aws logs filter-log-events --log-group-name /aws/sagemaker/Endpoints/<endpoint> "
    "--filter-pattern '\" 503 \"' against the judge's record for that run", manual="it needs a load test",
    applies=applies.judged)
SHADOW_TARGET = Check(
    "shadow-target-variant", "TargetVariant reaches a shadow GPU variant",
    "the same command as invocations-shape with --target-variant gpu", manual=INVOKES, applies=applies.shadowed)
STANDING_ALARM_ROLLBACK = Check(
    "standing-alarm-rollback", "a rollback alarm already in ALARM when an update starts rolls the update back",
    "aws cloudwatch set-alarm-state --alarm-name <endpoint>-judge-verdict --state-value ALARM --state-reason test, "
    "deploy a change, watch aws sagemaker describe-endpoint", manual="it sets an alarm and deploys a change",
    applies=applies.cutover)
SHADOW_SAMPLING = Check(
    "shadow-sampling", "what share of an endpoint's requests SageMaker copies to a shadow variant",
    "aws cloudwatch get-metric-statistics --namespace AWS/SageMaker --metric-name Invocations --dimensions "
    "Name=EndpointName,Value=<endpoint> Name=VariantName,Value=neuron (then gpu) --statistics Sum --period 86400 over a "
    "day: the ratio is the share", run=_run_sampling,
    permission="tag:GetResources, sagemaker:DescribeEndpoint, cloudwatch:GetMetricStatistics", applies=applies.shadowed)
WEIGHTS_TIMING = Check(
    "failover-timing", "how long SageMaker takes to apply UpdateEndpointWeightsAndCapacities and to bring a pool "
    "instance into service", "time aws sagemaker update-endpoint-weights-and-capacities ... until describe-endpoint "
    "reads InService", manual="it moves traffic (a change)", applies=applies.gpu_standby)
CANARY_ROUNDING = Check(
    "canary-rounding", "how SageMaker rounds a CAPACITY_PERCENT step on a variant of one or two instances",
    "aws sagemaker describe-endpoint during an update (PendingDeploymentSummary)", manual="it needs an update "
    "under way (a change)", applies=applies.cutover)
SCALABLE_TARGET_RIGHT = Check(
    "scalable-target-right", "IAM evaluates aws:ResourceTag/neuronfleet:failover on an existing scalable target for "
    "RegisterScalableTarget", "aws iam simulate-principal-policy --policy-source-arn <failover role> --action-names "
    "application-autoscaling:RegisterScalableTarget --resource-arns <target ARN> --context-entries ...",
    run=_run_scalable_target, permission="tag:GetResources, lambda:ListFunctions, "
    "application-autoscaling:DescribeScalableTargets, application-autoscaling:ListTagsForResource, "
    "iam:SimulatePrincipalPolicy", applies=applies.failover)
EXECUTION_ROLE_SOURCE = Check(
    "execution-role-source-arn", "SageMaker sends aws:SourceArn when it assumes an endpoint's execution role",
    "the first deploy's endpoints reach InService", run=_run_in_service,
    permission="tag:GetResources, sagemaker:DescribeEndpoint", applies=applies.endpoints)
HUB_COPY = Check(
    "hub-copy", "SageMaker serves a gated hub model's copy from its S3 prefix, and the copier finishes within "
    "CloudFormation's hour", "aws logs filter-log-events --log-group-name <copier log group> --filter-pattern "
    "'\"copied\"'; aws sagemaker describe-model --model-name <gpu model> shows ModelDataSource and no HF_TOKEN",
    run=_run_hub_copy, permission="tag:GetResources, lambda:ListFunctions, logs:FilterLogEvents, "
    "sagemaker:DescribeEndpoint, sagemaker:DescribeEndpointConfig, sagemaker:DescribeModel", applies=applies.staged)

CHECKS: tuple[Check, ...] = (OPTIMUM_CACHE, INVOCATIONS_SHAPE, JUDGE_TRANSIENT, SHADOW_TARGET, STANDING_ALARM_ROLLBACK,
                             SHADOW_SAMPLING, WEIGHTS_TIMING, CANARY_ROUNDING, SCALABLE_TARGET_RIGHT,
                             EXECUTION_ROLE_SOURCE, HUB_COPY)

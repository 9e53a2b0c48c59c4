"""The inference rows of docs/checks.md as checks: the serving containers, the judge, SageMaker's deployments."""

from __future__ import annotations

from .capacity import NOT_YET_AUTOMATED
from .registry import Check

INVOKES = "it invokes the endpoint (a billed request)"

OPTIMUM_CACHE = Check(
    "optimum-cache", "optimum-neuron's public cache holds the example models' shapes; the pinned revisions exist",
    "optimum-cli neuron cache lookup <model>; huggingface_hub.HfApi().model_info(<model>, revision=<sha>)",
    manual="it reads the Hugging Face Hub, outside the account")
INVOCATIONS_SHAPE = Check(
    "invocations-shape", "vLLM's /invocations on SageMaker answers a completion in OpenAI's shape",
    "aws sagemaker-runtime invoke-endpoint --endpoint-name <name> --target-variant neuron --content-type "
    "application/json --cli-binary-format raw-in-base64-out --body "
    "'{\"prompt\":\"Say this is a test\",\"max_tokens\":7,\"temperature\":0,\"logprobs\":1}' out.json", manual=INVOKES)
JUDGE_TRANSIENT = Check(
    "judge-transient-codes", "the pilot judge takes a container's 429 or 503 as transient",
    "during a load test, aws logs filter-log-events --log-group-name /aws/sagemaker/Endpoints/<endpoint> "
    "--filter-pattern '\" 503 \"' against the judge's record for that run", manual="it needs a load test")
SHADOW_TARGET = Check(
    "shadow-target-variant", "TargetVariant reaches a shadow GPU variant",
    "the same command as invocations-shape with --target-variant gpu", manual=INVOKES)
STANDING_ALARM_ROLLBACK = Check(
    "standing-alarm-rollback", "a rollback alarm already in ALARM when an update starts rolls the update back",
    "aws cloudwatch set-alarm-state --alarm-name <endpoint>-judge-verdict --state-value ALARM --state-reason test, "
    "deploy a change, watch aws sagemaker describe-endpoint", manual="it sets an alarm and deploys a change")
SHADOW_SAMPLING = Check(
    "shadow-sampling", "what share of an endpoint's requests SageMaker copies to a shadow variant",
    "aws cloudwatch get-metric-statistics --namespace AWS/SageMaker --metric-name Invocations for the neuron and gpu "
    "variants over a day: the ratio is the share", manual=NOT_YET_AUTOMATED)
WEIGHTS_TIMING = Check(
    "failover-timing", "how long SageMaker takes to apply UpdateEndpointWeightsAndCapacities and to bring a pool "
    "instance into service", "time aws sagemaker update-endpoint-weights-and-capacities ... until describe-endpoint "
    "reads InService", manual="it moves traffic (a change)")
CANARY_ROUNDING = Check(
    "canary-rounding", "how SageMaker rounds a CAPACITY_PERCENT step on a variant of one or two instances",
    "aws sagemaker describe-endpoint during an update (PendingDeploymentSummary)", manual="it needs an update "
    "under way (a change)")
SCALABLE_TARGET_RIGHT = Check(
    "scalable-target-right", "IAM evaluates aws:ResourceTag/neuronfleet:failover on an existing scalable target for "
    "RegisterScalableTarget", "aws iam simulate-principal-policy --policy-source-arn <failover role> --action-names "
    "application-autoscaling:RegisterScalableTarget --resource-arns <target ARN> --context-entries ...",
    manual=NOT_YET_AUTOMATED)
EXECUTION_ROLE_SOURCE = Check(
    "execution-role-source-arn", "SageMaker sends aws:SourceArn when it assumes an endpoint's execution role",
    "the first deploy's endpoints reach InService", manual=NOT_YET_AUTOMATED)
HUB_COPY = Check(
    "hub-copy", "SageMaker serves a gated hub model's copy from its S3 prefix, and the copier finishes within "
    "CloudFormation's hour", "aws logs filter-log-events --log-group-name <copier log group> --filter-pattern "
    "'\"copied\"'; aws sagemaker describe-model --model-name <gpu model> shows ModelDataSource and no HF_TOKEN",
    manual=NOT_YET_AUTOMATED)

CHECKS: tuple[Check, ...] = (OPTIMUM_CACHE, INVOCATIONS_SHAPE, JUDGE_TRANSIENT, SHADOW_TARGET, STANDING_ALARM_ROLLBACK,
                             SHADOW_SAMPLING, WEIGHTS_TIMING, CANARY_ROUNDING, SCALABLE_TARGET_RIGHT,
                             EXECUTION_ROLE_SOURCE, HUB_COPY)

"""``neuronfleet verify``'s read-only checks of the Capacity Block, IAM, inference and cost rows: each judge on the
AWS CLI's own example answer of its operation (tests/data/aws_cli, verbatim, checked against botocore's output shape
first) and on variations of it for each outcome; where the CLI has no example, a fixture built from botocore's shape
(said in the test's docstring). The run functions on a stub of the reads: what they ask and what they make of it."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from neuronfleet.preflight.checks import Failed
from neuronfleet.verify import CHECKS, capacity
from neuronfleet.verify.capacity import block_requests, offerings_answered, trail_covers
from neuronfleet.verify.registry import Context
from neuronfleet.verify.roles import HANDLERS, LIFECYCLE_HANDLER, arn_parts, bound_right, with_handler
from tests.conftest import ROOT
from tests.publisher_examples import AWS_CLI, output_blocks, response

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def example(name: str, service: str, operation: str, index: int = 0) -> Any:
    """The ``index``-th JSON output of the AWS CLI's example page, checked against botocore's shape, as boto3 gives
    it."""
    blocks = output_blocks((AWS_CLI / f"{name}.rst").read_text().expandtabs(8))
    return response(service, operation, json.loads(blocks[index]))


def fleet(name: str = "prod") -> Any:
    from neuronfleet import load_fleet

    return load_fleet(ROOT / "config" / f"{name}.yaml")


def by_id(check_id: str) -> Any:
    return next(c for c in CHECKS if c.id == check_id)


class Reads:
    """verify's reads answered from a table; a Failed in the table answers that read; calls are recorded."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        if name not in self.answers:
            raise AttributeError(name)

        def read(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args or kwargs))
            answer = self.answers[name]
            return answer(*args, **kwargs) if callable(answer) else answer
        return read


def run(check_id: str, reads: Reads, name: str = "prod") -> Any:
    return by_id(check_id).check(Context(fleet=fleet(name), reads=reads, now=NOW))


# ------------------------------------------------------------------------------ capacity-block-offerings


def offering_page(**extra: Any) -> dict[str, Any]:
    """EC2 DescribeCapacityBlockOfferings has no AWS CLI example page and no botocore example (tests/data/aws_cli/
    README.md): this answer is built from botocore's output shape, which :func:`response` checks; its values are
    not confirmed by a publisher."""
    offer = {"CapacityBlockOfferingId": "cb-0123456789abcdef0", "InstanceType": "trn2.3xlarge",
             "AvailabilityZone": "us-east-2b", "InstanceCount": 1, "StartDate": "2026-12-01T11:30:00Z",
             "EndDate": "2026-12-02T11:30:00Z", "CapacityBlockDurationHours": 24, "UpfrontFee": "48.00",
             "CurrencyCode": "USD", "Tenancy": "default", **extra}
    return response("ec2", "DescribeCapacityBlockOfferings", {"CapacityBlockOfferings": [offer]})


def test_offerings_hold_when_ec2_answers_for_each_type_and_break_when_it_refuses_the_name() -> None:
    offers = offering_page()["CapacityBlockOfferings"]
    ultra = offering_page(InstanceType="trn2u.48xlarge", UltraserverType="u-trn2x64", UltraserverCount=1,
                          InstanceCount=4)["CapacityBlockOfferings"]
    found = offerings_answered({"trn2.3xlarge": offers, "UltraServer u-trn2x64": ultra})
    assert found.outcome == "holds"
    assert "trn2.3xlarge: 1 offerings for 24 h (trn2.3xlarge)" in found.seen and "(u-trn2x64)" in found.seen
    none_now = offerings_answered({"trn2.3xlarge": []})
    assert none_now.outcome == "holds" and "none on sale now" in none_now.seen
    refused = Failed("InvalidParameterValue", "The value 'u-trn2x64' for parameter UltraserverType is invalid.")
    found = offerings_answered({"trn2.3xlarge": offers, "UltraServer u-trn2x64": refused})
    assert found.outcome == "broken" and "EC2 refuses UltraServer u-trn2x64" in found.seen
    assert "capacity_blocks.json" in found.fix
    with pytest.raises(ValueError, match="answers: got none"):
        offerings_answered({})


def test_offerings_ask_the_ultraserver_name_for_ultraserver_types_and_stop_on_a_denied_read() -> None:
    prod = fleet("prod")
    asked = block_requests(prod)
    blocks = [c for c in prod.training_clusters if c.capacity.type == "capacity-block"]
    assert blocks and len(asked) >= 1
    from neuronfleet.facts.catalog import capacity_blocks

    for cluster in blocks:
        ultra = capacity_blocks().ultraserver_types.get(cluster.instance_type)
        key = f"UltraServer {next(iter(ultra))}" if ultra else cluster.instance_type
        assert key in asked
    reads = Reads(block_offerings=offering_page()["CapacityBlockOfferings"])
    assert run("capacity-block-offerings", reads).outcome == "holds"
    assert all(call[1]["hours"] == 24 for call in reads.calls)
    denied = run("capacity-block-offerings", Reads(block_offerings=Failed("UnauthorizedOperation", "no")))
    assert denied.outcome == "unchecked" and "ec2:DescribeCapacityBlockOfferings" in denied.fix
    refused = run("capacity-block-offerings", Reads(block_offerings=Failed("InvalidParameterValue", "bad")))
    assert refused.outcome == "broken"
    assert by_id("capacity-block-offerings").not_applying(fleet("dev")) != ""


# ------------------------------------------------------------------------------ purchase-trail


def trails() -> list[dict[str, Any]]:
    found = example("cloudtrail-describe-trails", "cloudtrail", "DescribeTrails")["trailList"]
    assert [t["HomeRegion"] for t in found] == ["us-east-1", "us-east-1"]
    return found


def trail_status() -> dict[str, Any]:
    return example("cloudtrail-get-trail-status", "cloudtrail", "GetTrailStatus")


def test_the_examples_logging_trail_covers_its_home_region_and_not_another() -> None:
    listed, status = trails(), trail_status()
    assert status["IsLogging"] is True
    statuses = {t["TrailARN"]: status for t in listed}
    found = trail_covers(listed, statuses, "us-east-1")
    assert found.outcome == "holds" and found.seen.startswith("Trail1 logs us-east-1's API calls")
    elsewhere = trail_covers(listed, statuses, "us-east-2")  # single-region trails of us-east-1
    assert elsewhere.outcome == "broken" and "no CloudTrail trail covers us-east-2" in elsewhere.seen
    multi = [{**copy.deepcopy(listed[0]), "IsMultiRegionTrail": True}]
    assert trail_covers(multi, statuses, "us-east-2").outcome == "holds"
    stopped = {t["TrailARN"]: {**status, "IsLogging": False} for t in listed}
    found = trail_covers(listed, stopped, "us-east-1")
    assert found.outcome == "broken" and "start-logging" in found.fix
    assert trail_covers(listed, {}, "us-east-1").outcome == "broken"  # no status read: not shown logging


def test_the_trail_check_reads_the_status_of_the_covering_trails_only() -> None:
    listed = [{**t, "HomeRegion": "us-east-2"} for t in trails()][:1] + trails()[1:]
    reads = Reads(trails=listed, trail_status=trail_status())
    assert run("purchase-trail", reads).outcome == "holds"
    assert [c[0] for c in reads.calls] == ["trails", "trail_status"]
    assert by_id("purchase-trail").not_applying(fleet("dev")) != ""


# ------------------------------------------------------------------------------ the IAM simulator's rights


def simulation(decision: str | None = None, resource: str | None = None) -> list[dict[str, Any]]:
    """The CLI's first simulate-principal-policy example (allowed), its decision and resource varied."""
    results = copy.deepcopy(example("iam-simulate-principal-policy", "iam", "SimulatePrincipalPolicy")
                            ["EvaluationResults"])
    for r in results:
        r["EvalDecision"] = decision or r["EvalDecision"]
        r["EvalResourceName"] = resource or r["EvalResourceName"]
    return results


def test_a_right_holds_when_allowed_on_the_fleets_own_and_denied_on_another() -> None:
    assert simulation()[0]["EvalDecision"] == "allowed"
    denied = example("iam-simulate-principal-policy", "iam", "SimulatePrincipalPolicy", 1)["EvaluationResults"]
    assert denied[0]["EvalDecision"] == "implicitDeny"
    args = {"role": "arn:aws:iam::123456789012:role/r", "right": "x", "breaks": "it breaks", "widens": "it widens"}
    found = bound_right(simulation(), denied, **args)
    assert found.outcome == "holds" and "codecommit:ListRepositories on *: allowed" in found.seen
    assert "dynamodb:CreateBackup on *: implicitDeny" in found.seen
    refused = bound_right(denied, denied, **args)
    assert refused.outcome == "broken" and refused.fix.startswith("it breaks")
    wide = bound_right(simulation(), simulation(), **args)
    assert wide.outcome == "broken" and wide.fix.startswith("it widens") and "expected implicitDeny" in wide.seen
    missing = [{**denied[0], "MissingContextValues": ["aws:ResourceTag/neuronfleet:fleet"]}]
    assert "aws:ResourceTag/neuronfleet:fleet" in bound_right(missing, [], **args).seen
    with pytest.raises(ValueError, match="allowed: got no simulation result"):
        bound_right([], denied, **args)


def functions(handler: str = LIFECYCLE_HANDLER, **environment: str) -> list[dict[str, Any]]:
    """The CLI's list-functions example, its first function given the kit's handler (and environment)."""
    listed = copy.deepcopy(example("lambda-list-functions", "lambda", "ListFunctions")["Functions"])
    listed[0]["Handler"] = handler
    if environment:
        listed[0]["Environment"] = {"Variables": environment}
    return listed


def test_the_lifecycle_role_is_found_by_its_handler_and_simulated_with_and_without_the_fleets_tag() -> None:
    listed = functions()
    assert [f["Handler"] for f in with_handler(listed, LIFECYCLE_HANDLER)] == [LIFECYCLE_HANDLER]
    assert with_handler(functions("index.handler"), LIFECYCLE_HANDLER) == []
    assert arn_parts(listed[0]["Role"]) == ("aws", "123456789012")
    with pytest.raises(ValueError, match="ARN: got 'role'"):
        arn_parts("role")

    name = fleet("prod").name

    def simulate(role: str, actions: list[str], resources: list[str], context: dict[str, str]) -> Any:
        own = context["aws:ResourceTag/neuronfleet:fleet"] == name
        return simulation("allowed" if own else "implicitDeny", resources[0])

    reads = Reads(functions=listed, simulate=simulate)
    found = run("lifecycle-extension-right", reads)
    assert found.outcome == "holds", found
    (_, first), (_, second) = [c for c in reads.calls if c[0] == "simulate"]
    role, actions, resources, context = first
    assert role == listed[0]["Role"] and actions == ["ec2:PurchaseCapacityBlockExtension"]
    assert resources == ["arn:aws:ec2:us-east-2:123456789012:capacity-reservation/cr-00000000000000000"]
    assert context == {"aws:ResourceTag/neuronfleet:fleet": name}
    assert second[3] == {"aws:ResourceTag/neuronfleet:fleet": f"{name}-not-this-fleet"}
    everyone = run("lifecycle-extension-right", Reads(functions=listed, simulate=simulation()))
    assert everyone.outcome == "broken" and "not the fleet's" in everyone.fix
    nobody = run("lifecycle-extension-right", Reads(functions=listed, simulate=simulation("implicitDeny")))
    assert nobody.outcome == "broken" and "AccessDenied" in nobody.fix
    assert run("lifecycle-extension-right", Reads(functions=functions("index.handler"))).outcome == "not yet"
    denied = run("lifecycle-extension-right", Reads(functions=listed, simulate=Failed("AccessDenied", "no")))
    assert denied.outcome == "unchecked" and "iam:SimulatePrincipalPolicy" in denied.fix
    assert by_id("lifecycle-extension-right").not_applying(fleet("dev")) != ""
    assert by_id("lifecycle-extension-right").not_applying(fleet("prod")) == ""


def test_every_handler_verify_looks_for_is_one_a_construct_deploys() -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "constructs" / "neuronfleet").rglob("*.py")
                        if "verify" not in p.parts)
    from neuronfleet.verify.cost import SCHEDULED_HANDLERS

    assert len(HANDLERS) == 3 and len(SCHEDULED_HANDLERS) == 9
    for handler in (*HANDLERS, *SCHEDULED_HANDLERS):
        assert re.search(rf'handler="{re.escape(handler)}"', sources), handler


def test_capacity_checks_read_the_account_now() -> None:
    assert all(c.run is not None for c in (capacity.BLOCK_OFFERINGS, capacity.LIFECYCLE_EXTENSION_RIGHT,
                                            capacity.PURCHASE_TRAIL))


# ------------------------------------------------------------------------------ gpu-move-submit


QUEUE = "arn:aws:batch:us-east-2:123456789012:job-queue/prod-gpu"
DEFINITION = "arn:aws:batch:us-east-2:123456789012:job-definition/prod-gpu-train:3"


def test_the_gpu_move_is_simulated_on_the_queue_and_definitions_the_function_names_and_not_another() -> None:
    from neuronfleet.verify.training import another_definition, moves_to

    listed = functions(GPU_QUEUE_ARN=QUEUE, GPU_JOB_DEFINITIONS=json.dumps([DEFINITION]))
    assert moves_to(listed[0]) == (QUEUE, [DEFINITION])
    assert moves_to(functions()[0]) == ("", [])
    with pytest.raises(ValueError, match="GPU_JOB_DEFINITIONS: got 'x'"):
        moves_to(functions(GPU_JOB_DEFINITIONS="x")[0])
    other = another_definition(DEFINITION)
    assert other == "arn:aws:batch:us-east-2:123456789012:job-definition/neuronfleet-verify-not-the-pools:1"

    def simulate(role: str, actions: list[str], resources: list[str], context: dict[str, str]) -> Any:
        return simulation("implicitDeny" if resources == [other] else "allowed", resources[0])

    reads = Reads(functions=listed, simulate=simulate)
    found = run("gpu-move-submit", reads)
    assert found.outcome == "holds" and f"{QUEUE}: allowed" in found.seen and f"{other}: implicitDeny" in found.seen
    assert "moved" in found.seen
    assert [c[1][2] for c in reads.calls if c[0] == "simulate"] == [[QUEUE], [DEFINITION], [other]]
    assert {tuple(c[1][1]) for c in reads.calls if c[0] == "simulate"} == {("batch:SubmitJob",)}
    refused = run("gpu-move-submit", Reads(functions=listed, simulate=simulation("implicitDeny")))
    assert refused.outcome == "broken" and "Batch refused the resubmission" in refused.fix
    wide = run("gpu-move-submit", Reads(functions=listed, simulate=simulation()))
    assert wide.outcome == "broken" and "not the pool's" in wide.fix
    assert run("gpu-move-submit", Reads(functions=functions())).outcome == "not yet"
    assert by_id("gpu-move-submit").not_applying(fleet("dev")) != ""


# ------------------------------------------------------------------------------ scalable-target-right


def scalable_targets(resource_id: str = "endpoint/prod-chat/variant/gpu") -> list[dict[str, Any]]:
    """The CLI's describe-scalable-targets example (an ECS service), given a SageMaker variant's resource id."""
    found = copy.deepcopy(example("application-autoscaling-describe-scalable-targets", "application-autoscaling",
                                  "DescribeScalableTargets")["ScalableTargets"])
    assert found[0]["ResourceId"] == "service/default/web-app"
    found[0]["ResourceId"] = resource_id
    return found


def test_the_failover_right_is_simulated_on_the_fleets_gpu_target_with_its_tag_and_another() -> None:
    from neuronfleet.verify.inference import fleet_targets

    example_targets = scalable_targets("service/default/web-app")
    assert fleet_targets(example_targets, ["prod-chat"]) == []  # the example's ECS service is no variant of ours
    targets = scalable_targets()
    assert fleet_targets(targets, ["prod-chat"]) == targets
    assert fleet_targets(scalable_targets("endpoint/prod-chat/variant/neuron"), ["prod-chat"]) == []
    arn = targets[0]["ScalableTargetARN"]
    endpoint = "arn:aws:sagemaker:us-east-2:123456789012:endpoint/prod-chat"

    def simulate(role: str, actions: list[str], resources: list[str], context: dict[str, str]) -> Any:
        own = context["aws:ResourceTag/neuronfleet:failover"] == "c8abc"
        return simulation("allowed" if own else "implicitDeny", resources[0])

    answers: dict[str, Any] = {"functions": functions("failover.handler.handler"), "tagged": [endpoint],
               "scalable_targets": targets,
               "target_tags": {"neuronfleet:failover": "c8abc"}, "simulate": simulate}
    reads = Reads(**answers)
    assert run("scalable-target-right", reads).outcome == "holds"
    _, (role, actions, resources, context) = next(c for c in reads.calls if c[0] == "simulate")
    assert role == answers["functions"][0]["Role"]
    assert actions == ["application-autoscaling:RegisterScalableTarget"] and resources == [arn]
    assert context == {"application-autoscaling:service-namespace": "sagemaker",
                       "application-autoscaling:scalable-dimension": "sagemaker:variant:DesiredInstanceCount",
                       "aws:ResourceTag/neuronfleet:failover": "c8abc"}
    untagged = run("scalable-target-right", Reads(**{**answers, "target_tags": {}}))
    assert untagged.outcome == "broken" and "no neuronfleet:failover tag" in untagged.seen
    refused = run("scalable-target-right", Reads(**{**answers, "simulate": simulation("implicitDeny")}))
    assert refused.outcome == "broken" and "FailoverErrors" in refused.fix
    assert run("scalable-target-right", Reads(**{**answers, "scalable_targets": []})).outcome == "not yet"
    assert run("scalable-target-right", Reads(**{**answers, "functions": functions()})).outcome == "not yet"


def test_the_failover_constants_are_scaling_iams() -> None:
    """verify repeats inference/scaling_iam.py's constants (it does not load aws-cdk-lib): read them from its
    source."""
    import ast

    from neuronfleet.verify import inference

    tree = ast.parse((ROOT / "constructs" / "neuronfleet" / "inference" / "scaling_iam.py").read_text())
    values = {t.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Constant)}
    for name in ("FAILOVER_TAG", "SAGEMAKER_NAMESPACE", "VARIANT_INSTANCES"):
        assert getattr(inference, name) == values[name], name


# ------------------------------------------------------------------------------ the endpoints


def endpoint(status: str = "InService", reason: str | None = None, shadow: bool = False) -> dict[str, Any]:
    """SageMaker DescribeEndpoint has no AWS CLI example page and no botocore example (tests/data/aws_cli/README.md):
    this answer is built from botocore's output shape, which :func:`response` checks; the values are the kit's
    (variants neuron and gpu), not a publisher's."""
    doc: dict[str, Any] = {
        "EndpointName": "prod-chat", "EndpointArn": "arn:aws:sagemaker:us-east-2:123456789012:endpoint/prod-chat",
        "EndpointConfigName": "prod-chat-config-1", "EndpointStatus": status,
        "CreationTime": "2026-11-28T10:00:00Z", "LastModifiedTime": "2026-11-28T10:20:00Z",
        "ProductionVariants": [{"VariantName": "neuron", "CurrentInstanceCount": 1}]}
    if reason:
        doc["FailureReason"] = reason
    if shadow:
        doc["ShadowProductionVariants"] = [{"VariantName": "gpu", "CurrentInstanceCount": 1}]
    return response("sagemaker", "DescribeEndpoint", doc)


def test_endpoints_in_service_hold_and_a_failure_naming_the_role_is_broken() -> None:
    from neuronfleet.verify.inference import endpoints_in_service

    assert endpoints_in_service([endpoint()]).outcome == "holds"
    role = endpoint("Failed", "The execution role ARN arn:aws:iam::123456789012:role/x could not be assumed.")
    found = endpoints_in_service([endpoint(), role])
    assert found.outcome == "broken" and "could not be assumed" in found.seen and "aws:SourceArn" in found.fix
    other = endpoints_in_service([endpoint("Failed", "The primary container for production variant neuron did not "
                                                     "pass the ping health check.")])
    assert other.outcome == "unchecked" and "names no role" in other.seen
    assert endpoints_in_service([endpoint("Creating")]).outcome == "not yet"
    assert endpoints_in_service([]).outcome == "not yet"
    assert run("execution-role-source-arn", Reads(endpoints=[endpoint()])).outcome == "holds"
    denied = run("execution-role-source-arn", Reads(endpoints=Failed("AccessDeniedException", "no")))
    assert denied.outcome == "unchecked" and "sagemaker:DescribeEndpoint" in denied.fix
    assert by_id("execution-role-source-arn").not_applying(fleet("dev")) == ""


def test_the_shadow_share_is_read_from_the_examples_statistics_and_judged() -> None:
    from neuronfleet.verify.inference import shadow_share, total

    points = example("cloudwatch-get-metric-statistics", "cloudwatch", "GetMetricStatistics")["Datapoints"]
    assert total(points) == 0  # the example asks Maximum: no Sum in its points
    maximum = total(points, "Maximum")
    assert maximum == pytest.approx(sum(p["Maximum"] for p in points)) and maximum > 1000
    assert shadow_share({"prod-chat": (maximum, maximum)}).outcome == "holds"
    found = shadow_share({"prod-chat": (1000.0, 500.0)})
    assert found.outcome == "broken" and "50% of 1,000 requests copied" in found.seen
    assert shadow_share({"prod-chat": (0.0, 0.0)}).outcome == "not yet"
    assert shadow_share({}).outcome == "not yet"
    sums = {"neuron": [{"Sum": 1000.0}], "gpu": [{"Sum": 990.0}]}
    reads = Reads(endpoints=[endpoint(shadow=True)],
                  metric_sum=lambda ns, metric, dims, start, end: sums[dims["VariantName"]])
    found = run("shadow-sampling", reads, "pilot")
    assert found.outcome == "holds" and "99% of 1,000" in found.seen
    _, (ns, metric, dims, start, end) = reads.calls[1]
    assert (ns, metric, end - start) == ("AWS/SageMaker", "Invocations", timedelta(days=1))
    assert dims == {"EndpointName": "prod-chat", "VariantName": "neuron"}
    assert run("shadow-sampling", Reads(endpoints=[endpoint()]), "pilot").outcome == "not yet"


def log_events(*messages: str) -> list[dict[str, Any]]:
    """CloudWatch Logs FilterLogEvents has no AWS CLI example page (awscli/examples/logs at 07c4fe36 has none): the
    answer is built from botocore's output shape, which :func:`response` checks; the message is the copier's own
    Powertools line (lambdas/hub_staging/handler.py logs "copied" with s3_uri, files and bytes)."""
    page = {"events": [{"logStreamName": "2026/11/28/[$LATEST]abc", "timestamp": 1764324000000 + i,
                        "message": m, "ingestionTime": 1764324000500 + i, "eventId": str(i)}
                       for i, m in enumerate(messages)], "searchedLogStreams": []}
    return response("logs", "FilterLogEvents", page)["events"]


COPIED = json.dumps({"level": "INFO", "location": "handler:99", "message": "copied", "timestamp":
                     "2026-11-28 10:05:00,000+0000", "service": "hub_staging", "s3_uri": "s3://b/hub/m/",
                     "files": 7, "bytes": 16_000_000_000})


def model(env: dict[str, str] | None = None, staged: bool = True) -> dict[str, Any]:
    """SageMaker DescribeModel has no AWS CLI example page: built from botocore's output shape (checked)."""
    container: dict[str, Any] = {"Image": "763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:0.1",
                                 "Environment": env or {"HF_MODEL_ID": "/opt/ml/model"}}
    if staged:
        container["ModelDataSource"] = {"S3DataSource": {"S3Uri": "s3://b/hub/m/", "S3DataType": "S3Prefix",
                                                         "CompressionType": "None"}}
    return response("sagemaker", "DescribeModel", {
        "ModelName": "prod-chat-gpu", "PrimaryContainer": container, "CreationTime": "2026-11-28T10:00:00Z",
        "ModelArn": "arn:aws:sagemaker:us-east-2:123456789012:model/prod-chat-gpu", "EnableNetworkIsolation": True})


def test_the_hub_copy_holds_when_a_model_serves_the_copy_without_the_token() -> None:
    from neuronfleet.verify.inference import copier_lines, hub_copies

    events = log_events("START RequestId: 1 Version: $LATEST", COPIED, "not json")
    copied = copier_lines(events)
    assert [c["bytes"] for c in copied] == [16_000_000_000]
    found = hub_copies(copied, [model()])
    assert found.outcome == "holds" and "16,000,000,000 bytes" in found.seen
    assert "kept a month" in hub_copies([], [model()]).seen
    token = hub_copies(copied, [model({"HF_TOKEN": "hf_x"})])
    assert token.outcome == "broken" and "HF_TOKEN" in token.seen and "rotate" in token.fix
    assert hub_copies(copied, [model(staged=False)]).outcome == "broken"
    assert hub_copies([], [model(staged=False)]).outcome == "not yet"
    config = {"ProductionVariants": [{"ModelName": "prod-chat-neuron"}],
              "ShadowProductionVariants": [{"ModelName": "prod-chat-gpu"}]}
    reads = Reads(functions=functions("hub_staging.handler.handler"), log_events=events, endpoints=[endpoint()],
                  endpoint_config=config, model=model())
    assert run("hub-copy", reads, "pilot").outcome == "holds"
    group = next(c for c in reads.calls if c[0] == "log_events")[1][0]
    assert group == "/aws/lambda/helloworld"  # the example function has no LoggingConfig: Lambda's default group
    assert [c[1][0] for c in reads.calls if c[0] == "model"] == ["prod-chat-neuron", "prod-chat-gpu"]


def test_each_check_applies_to_the_fleets_with_the_part() -> None:
    applying = {name: {c.id for c in CHECKS if c.run and not c.not_applying(fleet(name))}
                for name in ("dev", "prod", "pilot")}
    assert {"hub-copy", "shadow-sampling", "execution-role-source-arn"} <= applying["pilot"]
    assert {"scalable-target-right", "gpu-move-submit", "lifecycle-extension-right", "capacity-block-offerings",
            "purchase-trail"} <= applying["prod"]
    assert not {"hub-copy", "shadow-sampling", "scalable-target-right", "gpu-move-submit",
                "lifecycle-extension-right", "capacity-block-offerings", "purchase-trail"} & applying["dev"]


# ------------------------------------------------------------------------------ capacity-block-fee


def cost_results(usage_type: str | None = None, fleet_tag: str = "neuronfleet:fleet$nf-prod") -> list[dict[str, Any]]:
    """The CLI's get-cost-and-usage example (S3 grouped by SERVICE and a tag), its groups' first key replaced by a
    usage type when given (the shape Cost Explorer answers for GroupBy USAGE_TYPE and the fleet tag)."""
    page = copy.deepcopy(example("ce-get-cost-and-usage", "ce", "GetCostAndUsage"))
    if usage_type:
        for period in page["ResultsByTime"]:
            for group in period["Groups"]:
                group["Keys"] = [usage_type, fleet_tag]
    return page["ResultsByTime"]


def block(instance_type: str = "trn2.48xlarge", bought: timedelta = timedelta(days=10)) -> dict[str, Any]:
    """A Capacity Block as DescribeCapacityReservations answers it: the CLI's example reservation with the block's
    members (ReservationType, InstanceType, CreateDate: tests/data/aws_cli/README.md says why)."""
    (reservation, *_) = example("ec2-describe-capacity-reservations", "ec2", "DescribeCapacityReservations")[
        "CapacityReservations"]
    return {**reservation, "ReservationType": "capacity-block", "InstanceType": instance_type,
            "CreateDate": NOW - bought}


def test_the_fee_holds_when_booked_as_capacity_block_fee_and_waits_or_breaks_otherwise() -> None:
    from neuronfleet.verify.cost import block_fee, capacity_blocks_of

    fee = cost_results("USE2-CapacityBlockFee:trn2.48xlarge")
    found = block_fee(fee, [block()], NOW)
    assert found.outcome == "holds", found
    assert "USE2-CapacityBlockFee:trn2.48xlarge" in found.seen and "nf-prod" in found.seen
    plain = cost_results()  # the example as published: S3's service name, not a usage type the parser reads
    found = block_fee(plain, [block()], NOW)
    assert found.outcome == "broken" and "Amazon Simple Storage Service" in found.seen
    assert "unmatched" in found.fix
    upfront_usage = block_fee(cost_results("USE2-BoxUsage:trn2.48xlarge"), [block()], NOW)  # instance time, no fee
    assert upfront_usage.outcome == "broken" and "USE2-BoxUsage:trn2.48xlarge" in upfront_usage.seen
    other = block_fee(cost_results("USE2-CapacityBlock:trn2.48xlarge"), [block()], NOW)
    assert other.outcome == "broken" and "USE2-CapacityBlock:trn2.48xlarge" in other.seen
    assert block_fee(plain, [block(bought=timedelta(days=1))], NOW).outcome == "not yet"
    assert block_fee(fee, [], NOW).outcome == "not yet"
    assert block_fee(fee, [block("trn1.32xlarge")], NOW).outcome == "broken"  # a fee, but not for this type
    odcr = example("ec2-describe-capacity-reservations", "ec2", "DescribeCapacityReservations")["CapacityReservations"]
    assert capacity_blocks_of(odcr) == [] and capacity_blocks_of([block()]) == [block()]
    reads = Reads(fleet_reservations=[block()], costs_by_usage_type=fee)
    assert run("capacity-block-fee", reads).outcome == "holds"
    _, (start, end, record_types) = reads.calls[1]
    assert (start, end, tuple(record_types)) == ("2026-11-18", "2026-11-30", ("Upfront", "Refund"))
    assert run("capacity-block-fee", Reads(fleet_reservations=odcr)).outcome == "not yet"


# ------------------------------------------------------------------------------ data-exports-delivery


def get_export(created: datetime = NOW - timedelta(days=3)) -> dict[str, Any]:
    """Data Exports GetExport has no AWS CLI example page (awscli/examples has no bcm-data-exports folder at
    07c4fe36) and no botocore example: built from botocore's output shape (checked), with the kit's export's
    settings (cost/cur.py: CUR 2.0, Parquet, overwrite, prefix cur2)."""
    return response("bcm-data-exports", "GetExport", {
        "Export": {"ExportArn": "arn:aws:bcm-data-exports:us-east-1:123456789012:export/nf-org-cur2-abc",
                   "Name": "nf-org-cur2", "DataQuery": {"QueryStatement": "SELECT resource_tags FROM "
                                                                          "COST_AND_USAGE_REPORT"},
                   "DestinationConfigurations": {"S3Destination": {
                       "S3Bucket": "nf-org-exports", "S3Prefix": "cur2", "S3Region": "us-west-2",
                       "S3OutputConfigurations": {"OutputType": "CUSTOM", "Format": "PARQUET",
                                                  "Compression": "PARQUET", "Overwrite": "OVERWRITE_REPORT"}}},
                   "RefreshCadence": {"Frequency": "SYNCHRONOUS"}},
        "ExportStatus": {"StatusCode": "HEALTHY", "CreatedAt": created.isoformat()}})


def listed_objects(key: str | None = None) -> list[dict[str, Any]]:
    """The CLI's list-objects-v2 example (four .rtf documents), with an export object's key when given."""
    found = copy.deepcopy(example("s3api-list-objects-v2", "s3", "ListObjectsV2")["Contents"])
    if key:
        found[0]["Key"] = key
    return found


def test_the_export_holds_with_its_objects_and_waits_a_day_before_breaking() -> None:
    from neuronfleet.verify.cost import export_delivered

    documents = listed_objects()
    assert [o["Key"] for o in documents] == ["doc1.rtf", "doc2.rtf", "doc3.rtf", "doc4.rtf"]
    data = listed_objects("cur2/nf-org-cur2/data/BILLING_PERIOD=2026-11/nf-org-cur2-00001.snappy.parquet")
    found = export_delivered(get_export(), data, NOW)
    assert found.outcome == "holds" and "1 export objects under s3://nf-org-exports/cur2 (us-west-2)" in found.seen
    late = export_delivered(get_export(), documents, NOW)
    assert late.outcome == "broken" and "HEALTHY" in late.seen and "bucket policy" in late.fix
    early = export_delivered(get_export(NOW - timedelta(hours=5)), [], NOW)
    assert early.outcome == "not yet" and "2026-11-30 07:00" in early.fix
    reads = Reads(export=get_export(), objects=data)
    assert run("data-exports-delivery", reads, "org").outcome == "holds"
    assert reads.calls == [("export", ("nf-org-cur2",)), ("objects", ("nf-org-exports", "cur2", "us-west-2"))]
    missing = run("data-exports-delivery", Reads(export=Failed("NotFound", "none")), "org")
    assert missing.outcome == "not yet"
    assert by_id("data-exports-delivery").not_applying(fleet("org")) == ""
    assert by_id("data-exports-delivery").not_applying(fleet("dev")) != ""


# ------------------------------------------------------------------------------ the Price List


def price_list(**attributes: str) -> list[str]:
    """The CLI's get-products example (an EBS volume, per GB-Mo), its attributes, unit and price varied."""
    (text,) = example("pricing-get-products", "pricing", "GetProducts")["PriceList"]
    if not attributes:
        return [text]
    doc = json.loads(text)
    unit = attributes.pop("unit", None)
    usd = attributes.pop("usd", None)
    doc["product"]["attributes"].update(attributes)
    for term in doc["terms"]["OnDemand"].values():
        for dimension in term["priceDimensions"].values():
            dimension["unit"] = unit or dimension["unit"]
            dimension["pricePerUnit"]["USD"] = usd or dimension["pricePerUnit"]["USD"]
    return [json.dumps(doc)]


def test_one_product_per_type_holds_and_none_or_an_unpriced_one_is_broken() -> None:
    from neuronfleet.verify.cost import one_product

    ebs = one_product("trn1.32xlarge", "us-east-2", price_list(), NOW.date())
    assert ebs.outcome == "broken" and "no hourly (Hrs) On-Demand price" in ebs.seen  # the example is per GB-Mo
    instance = price_list(instanceType="trn1.32xlarge", regionCode="us-east-2", unit="Hrs", usd="21.50")
    found = one_product("trn1.32xlarge", "us-east-2", instance, NOW.date())
    assert found.outcome == "holds" and "one price 21.5 USD/h" in found.seen
    other = price_list(instanceType="trn1.32xlarge", regionCode="us-east-2", unit="Hrs", usd="24.00")
    other[0] = other[0].replace("3MKHN58N7RDDVGKJ", "3MKHN58N7RDDVGKK")
    assert one_product("trn1.32xlarge", "us-east-2", [*instance, *other], NOW.date()).outcome == "broken"
    assert one_product("trn1.32xlarge", "us-east-2", [], NOW.date()).outcome == "broken"
    from neuronfleet.lambdas.cost.logic.pricelist import wanted_attributes
    from neuronfleet.verify.cost import priced_types

    dev = fleet("dev")
    reads = Reads(products=lambda service, wanted: price_list(**wanted, unit="Hrs", usd="1.25"))
    found = run("price-list-filters", reads, "dev")
    assert found.outcome == "holds" and found.seen.count("one price 1.25") == len(priced_types(dev))
    assert [c[1][1] for c in reads.calls] == [wanted_attributes(t, dev.region) for t in priced_types(dev)]
    assert all(c[1][1].get("marketoption") == "OnDemand" for c in reads.calls if c[1][0] == "AmazonEC2")
    assert run("price-list-filters", Reads(products=[])).outcome == "broken"


def test_fsx_and_overhead_rates_are_read_from_the_examples_gb_month_price() -> None:
    from neuronfleet.verify.cost import fsx_rates, rate_matches, rates

    (sku, unit, usd, usage), = rates(price_list())
    assert (sku, unit, usd, usage) == ("3MKHN58N7RDDVGKJ", "GB-Mo", Decimal("0.1380000000"),
                                       "APS1-EBS:VolumeUsage.piops")
    found = fsx_rates(price_list(), "us-east-2")
    assert found.outcome == "holds" and "0.1380000000 USD/GB-Mo" in found.seen and "overhead_prices.json" in found.seen
    assert fsx_rates(price_list(unit="Hrs"), "us-east-2").outcome == "unchecked"
    assert rate_matches("x", Decimal("0.138"), price_list(), "us-east-2").outcome == "holds"
    off = rate_matches("x", Decimal("0.10"), price_list(), "us-east-2")
    assert off.outcome == "broken" and "0.1380000000" in off.seen and "0.10" in off.seen
    assert rate_matches("x", Decimal("0.10"), [], "us-east-2").outcome == "unchecked"
    assert rate_matches("x", Decimal("0.10"), price_list(usd="0.0000000000"), "us-east-2").outcome == "unchecked"
    reads = Reads(products=price_list(usd="0.01"))
    assert run("region-overhead-rates", reads).outcome == "broken"  # 0.01 matches the endpoint rate, not EKS's 0.10
    assert [c[1][2] for c in reads.calls] == [{"usagetype": "VpcEndpoint-Hours"},
                                             {"usagetype": "AmazonEKS-Hours:perCluster"}]
    assert run("quoted-rates", Reads(products=[])).outcome == "unchecked"


# ------------------------------------------------------------------------------ function-durations


def lambda_log_events() -> list[dict[str, Any]]:
    """The get-log-events output in AWS Lambda's own Python logging page (tests/data/lambda, verbatim), checked
    against botocore's GetLogEvents shape."""
    from tests.publisher_examples import git_blob_sha

    path = ROOT / "tests" / "data" / "lambda" / "python-logging.md"
    assert git_blob_sha(path) in (path.parent / "README.md").read_text()
    text = path.read_text()
    doc, _ = json.JSONDecoder().raw_decode(text, text.index('{\n    "events"'))
    return response("logs", "GetLogEvents", doc)["events"]


def test_durations_are_read_from_lambdas_own_report_line_and_judged_against_the_timeout() -> None:
    from neuronfleet.verify.cost import billed_ms, durations

    messages = [e["message"] for e in lambda_log_events()]
    assert billed_ms(messages) == [27.0]
    text = (ROOT / "tests" / "data" / "lambda" / "python-logging.md").read_text()
    plain = [line for line in text.splitlines() if line.startswith("REPORT RequestId")]
    assert billed_ms(plain) == [16.0, 80.0, 3.0]  # the page's other REPORT lines (spaces, not tabs)
    found = durations({"collector": (600, [27.0, 60_000.0])})
    assert found.outcome == "holds" and "mean 30.0 s, max 60.0 s of 600 s" in found.seen and "5%" in found.seen
    timed_out = durations({"collector": (600, [600_000.0])})
    assert timed_out.outcome == "broken" and "its whole timeout (600 s)" in timed_out.seen
    assert durations({"collector": (600, [])}).outcome == "not yet"
    listed = functions("cost.collector.handler")
    reads = Reads(functions=listed, log_events=lambda_log_events())
    assert run("function-durations", reads).outcome == "holds"
    assert next(c for c in reads.calls if c[0] == "log_events")[1][1] == '"REPORT RequestId"'


# ------------------------------------------------------------------------------ service-source-keys


def assume_role(service: str = "ecs-tasks.amazonaws.com", role: str = "nf-prod-train-a-JobRole1234",
                **extra: Any) -> list[dict[str, Any]]:
    """The CLI's lookup-events example (a ConsoleLogin), its CloudTrailEvent turned into a service's AssumeRole of
    the fleet's role (``extra``: its requestParameters/additionalEventData members)."""
    (event,) = copy.deepcopy(example("cloudtrail-lookup-events", "cloudtrail", "LookupEvents")["Events"])
    record = json.loads(event["CloudTrailEvent"])
    record.update({"eventName": "AssumeRole", "eventSource": "sts.amazonaws.com", "sourceIPAddress": service,
                   "userIdentity": {"type": "AWSService", "invokedBy": service},
                   "requestParameters": {"roleArn": f"arn:aws:iam::123456789012:role/{role}",
                                         "roleSessionName": "x", **extra.get("request", {})},
                   "additionalEventData": extra.get("additional")})
    event.update({"EventName": "AssumeRole", "CloudTrailEvent": json.dumps(record)})
    return [event]


def test_source_keys_are_looked_for_in_the_services_assume_role_records() -> None:
    from neuronfleet.verify.cost import source_keys

    (login,) = example("cloudtrail-lookup-events", "cloudtrail", "LookupEvents")["Events"]
    assert source_keys([login], "nf-prod").outcome == "not yet"  # a console sign-in: no service's AssumeRole
    keys = {"sourceAccount": "123456789012", "sourceArn": "arn:aws:ecs:us-east-2:123456789012:task/x"}
    found = source_keys(assume_role(request=keys), "nf-prod")
    assert found.outcome == "holds" and "ecs-tasks.amazonaws.com: 1 of 1" in found.seen
    bare = source_keys(assume_role(), "nf-prod")
    assert bare.outcome == "broken" and "0 of 1" in bare.seen and "do not add" in bare.fix
    flow = source_keys(assume_role("vpc-flow-logs.amazonaws.com", "nf-prod-network-FlowLogRole",
                                   additional={"SourceAccount": "1", "SourceArn": "a"}), "nf-prod")
    assert flow.outcome == "holds"
    assert source_keys(assume_role(role="other-JobRole"), "nf-prod").outcome == "not yet"  # not this fleet's role
    reads = Reads(assume_role_events=assume_role(request=keys))
    assert run("service-source-keys", reads).outcome == "holds"
    _, (start, end) = reads.calls[0]
    assert end - start == timedelta(days=7)


# ------------------------------------------------------------------------------ cur-resource-tags


CUR2_CSV = (
    "bill_payer_account_id,line_item_usage_account_id,line_item_usage_type,line_item_unblended_cost,resource_tags\n"
    '123456789012,123456789012,USE2-BoxUsage:g6e.12xlarge,10.5,"{""user_team"": ""ml""}"\n'
    "123456789012,123456789012,USE2-DataTransfer-Out-Bytes,0.01,\n")
"""No AWS-published CUR 2.0 CSV example was found (docs/checks.md's row): this text follows the column names of
CUR 2.0's table dictionary (cost/cur.py CUR2_COLUMNS) and writes the map cell as JSON, the form under check."""


def csv_export() -> dict[str, Any]:
    """GetExport (no CLI example; botocore's shape, checked) of a team's CUR 2.0 CSV export."""
    answer = copy.deepcopy(get_export())
    answer["Export"]["DestinationConfigurations"]["S3Destination"]["S3OutputConfigurations"].update(
        Format="TEXT_OR_CSV", Compression="GZIP")
    answer["Export"]["DataQuery"]["QueryStatement"] = "SELECT resource_tags FROM COST_AND_USAGE_REPORT"
    return response("bcm-data-exports", "GetExport", json.loads(json.dumps(answer, default=str)))


def test_the_tags_cell_of_a_csv_exports_first_bytes_is_read_as_json() -> None:
    import gzip

    from neuronfleet.verify.cost import csv_exports, first_lines, tags_cells

    header, tagged, untagged_line, _ = CUR2_CSV.split("\n")
    rows = [(tagged if i % 2 else untagged_line).replace("10.5", f"{i * 7919 % 10007}.{i:04d}") for i in range(400)]
    whole = gzip.compress("\n".join([header, *rows, ""]).encode())
    lines = first_lines(whole[: len(whole) // 2])  # a Range GET cuts the stream anywhere: whole lines only
    assert lines[0] == header and 20 < len(lines) < 400 and all(line.count(",") >= 4 for line in lines)
    found = tags_cells(lines, "s3://b/k.csv.gz")
    assert found.outcome == "holds" and '{"user_team": "ml"}' in found.seen
    assert first_lines(CUR2_CSV.encode()) == CUR2_CSV.split("\n")[:-1]  # not gzipped
    cut = CUR2_CSV.replace('"{""user_team"": ""ml""}"', "user_team=ml")
    bad = tags_cells(cut.split("\n"), "s3://b/k.csv")
    assert bad.outcome == "broken" and "'user_team=ml'" in bad.seen and "--workload-tag" in bad.fix
    untagged = CUR2_CSV.replace('"{""user_team"": ""ml""}"', "{}")
    assert tags_cells(untagged.split("\n"), "k").outcome == "not yet"
    no_column = CUR2_CSV.replace(",resource_tags", ",other")
    assert tags_cells(no_column.split("\n"), "k").outcome == "unchecked"
    assert csv_exports([get_export()]) == [] and csv_exports([csv_export()]) == [csv_export()]
    key = "cur2/team/data/BILLING_PERIOD=2026-11/team-00001.csv.gz"
    reads = Reads(exports=[get_export(), csv_export()], objects=listed_objects(key), object_start=whole[:4096])
    assert run("cur-resource-tags", reads, "dev").outcome == "holds"
    assert reads.calls[-1] == ("object_start", ("nf-org-exports", key, "us-west-2"))
    assert run("cur-resource-tags", Reads(exports=[get_export()]), "dev").outcome == "not yet"


def test_a_denied_read_leaves_each_of_these_checks_unchecked_naming_its_permission() -> None:
    """Every read answering AccessDenied: each read-only check of these rows says unchecked and names the IAM
    actions to allow (never a traceback, never a pass)."""

    class Denied:
        def __getattr__(self, name: str) -> Any:
            return lambda *args, **kwargs: Failed("AccessDenied", f"not allowed: {name}")

    ours = ("capacity-block-offerings", "lifecycle-extension-right", "purchase-trail", "gpu-move-submit",
            "scalable-target-right", "execution-role-source-arn", "shadow-sampling", "hub-copy", "capacity-block-fee",
            "data-exports-delivery", "price-list-filters", "cur-resource-tags", "fsx-price", "region-overhead-rates",
            "quoted-rates", "function-durations", "service-source-keys")
    assert len(ours) == 17
    for check_id in ours:
        check = by_id(check_id)
        assert check.run is not None and check.permission, check_id
        found = check.check(Context(fleet=fleet("prod"), reads=Denied(), now=NOW))
        assert found.outcome == "unchecked" and f"allow {check.permission} to the caller" in found.fix, check_id

"""The thin boto3 adapter ``neuronfleet verify`` reads the deployed fleet through: describe/list/get calls only, one
method per question, each answer a value or a :class:`~neuronfleet.preflight.checks.Failed` (a call that fails never
raises, so one check cannot stop the others). Built on preflight's :class:`~neuronfleet.preflight.account.Account`
(its clients, its retries, its reading of a failure)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from neuronfleet_contract.tags import FLEET_TAG

from ..preflight.account import Account
from ..preflight.checks import NOT_FOUND, Failed

READ_ONLY_PREFIXES = ("describe_", "list_", "get_", "simulate_principal_policy", "lookup_events", "filter_log_events")
"""The only kinds of call this adapter makes (a test holds every call of the module to them). ``filter_log_events``
reads a log group (CloudWatch Logs' read API)."""

US_EAST_1 = "us-east-1"
"""Where Cost Explorer, Data Exports and the Price List Query API answer (each is served from us-east-1: the kit's
own clients ask there too: settings.cost.CUR_EXPORT_REGION, lambdas/cost/logic/pricelist.py)."""

MOST_EVENTS = 500
"""The most log or CloudTrail events one read gathers (a sample enough to judge, a bounded number of pages)."""

FIRST_BYTES = 65536
"""The bytes of an export object read with a Range GET (its header line and the first rows)."""


class Reads(Account):
    """The fleet's deployed parts, read with the caller's credentials."""

    def __init__(self, region: str, fleet: str, client: Callable[[str, str], Any] | None = None) -> None:
        super().__init__(region, client)
        self.fleet = fleet

    def _fleet_filter(self) -> list[dict[str, Any]]:
        return [{"Name": f"tag:{FLEET_TAG}", "Values": [self.fleet]}]

    def instances(self, extra: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]] | Failed:
        """The fleet's running EC2 instances (tag ``neuronfleet:fleet``), narrowed by ``extra`` filters."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("ec2").get_paginator("describe_instances").paginate(Filters=[
                *self._fleet_filter(), {"Name": "instance-state-name", "Values": ["running"]}, *extra])
            return [i for page in pages for r in page.get("Reservations", []) for i in r.get("Instances", [])]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def compute_environments(self) -> list[dict[str, Any]] | Failed:
        """The account's AWS Batch compute environments that carry the fleet's tag."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("batch").get_paginator("describe_compute_environments").paginate()
            return [e for page in pages for e in page.get("computeEnvironments", [])
                    if (e.get("tags") or {}).get(FLEET_TAG) == self.fleet]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def metrics(self, namespace: str, metric: str) -> list[dict[str, Any]] | Failed:
        """CloudWatch's series of ``metric`` in ``namespace`` (ListMetrics: those with a point in the last 2 weeks)."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("cloudwatch").get_paginator("list_metrics").paginate(
                Namespace=namespace, MetricName=metric)
            return [m for page in pages for m in page.get("Metrics", [])]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def eks_clusters(self) -> list[str] | Failed:
        """The names of the fleet's EKS clusters (the Resource Groups Tagging API's ``eks:cluster`` ARNs,
        ``arn:aws:eks:<region>:<account>:cluster/<name>``)."""
        arns = self.tagged("eks:cluster")
        return arns if isinstance(arns, Failed) else sorted(arn.split(":cluster/", 1)[1] for arn in arns
                                                             if ":cluster/" in arn)

    def eks_addon(self, cluster: str, addon: str) -> dict[str, Any] | Failed | None:
        """EKS DescribeAddon's ``addon`` of ``cluster`` (addonVersion, status, health); None when the cluster has no
        such add-on (a not-found answer)."""
        answer = self._answer(lambda: self.client("eks").describe_addon(clusterName=cluster, addonName=addon))
        if isinstance(answer, Failed):
            return None if answer.not_found else answer
        return dict(answer.get("addon") or {})

    def console_output(self, instance_id: str) -> str | Failed:
        """An instance's latest console output as text (EC2 answers it base64-encoded; the AWS CLI decodes it)."""
        def run() -> str:
            answer = self.client("ec2").get_console_output(InstanceId=instance_id, Latest=True)
            return decode_console(answer.get("Output") or "")
        result: str | Failed = self._call(run)
        return result


    def _paged(self, pages: Callable[[], Any], key: str) -> list[dict[str, Any]] | Failed:
        """Every item under ``key`` of every page ``pages()`` gives (a botocore paginator's ``paginate``)."""
        result: list[dict[str, Any]] | Failed = self._call(
            lambda: [item for page in pages() for item in page.get(key, [])])
        return result

    def _answer(self, call: Callable[[], Any]) -> dict[str, Any] | Failed:
        """One call's answer without its ResponseMetadata."""
        def run() -> dict[str, Any]:
            answer = dict(call())
            answer.pop("ResponseMetadata", None)
            return answer
        result: dict[str, Any] | Failed = self._call(run)
        return result

    def tagged(self, resource_type: str) -> list[str] | Failed:
        """The ARNs of the fleet's resources of ``resource_type`` (``lambda:function``, ``sagemaker:endpoint``): the
        Resource Groups Tagging API's answer for the tag ``neuronfleet:fleet`` = the fleet (every resource the kit
        creates carries it: core.tagging)."""
        found = self._paged(lambda: self.client("resourcegroupstaggingapi").get_paginator("get_resources").paginate(
            TagFilters=[{"Key": FLEET_TAG, "Values": [self.fleet]}], ResourceTypeFilters=[resource_type]),
            "ResourceTagMappingList")
        return found if isinstance(found, Failed) else [str(r["ResourceARN"]) for r in found]

    def functions(self) -> list[dict[str, Any]] | Failed:
        """The fleet's Lambda functions' configurations (ListFunctions: Handler, Role, Timeout, Environment,
        LoggingConfig), those whose ARN carries the fleet's tag."""
        arns = self.tagged("lambda:function")
        if isinstance(arns, Failed):
            return arns
        found = self._paged(lambda: self.client("lambda").get_paginator("list_functions").paginate(), "Functions")
        return found if isinstance(found, Failed) else [f for f in found if f.get("FunctionArn") in set(arns)]

    def simulate(self, role_arn: str, actions: Sequence[str], resources: Sequence[str],
                 context: Mapping[str, str] | None = None) -> list[dict[str, Any]] | Failed:
        """IAM's policy simulator on ``role_arn`` (SimulatePrincipalPolicy: evaluates, changes nothing), with string
        context entries ``context`` (key -> value)."""
        entries = [{"ContextKeyName": k, "ContextKeyValues": [v], "ContextKeyType": "string"}
                   for k, v in (context or {}).items()]
        return self._paged(lambda: self.client("iam").get_paginator("simulate_principal_policy").paginate(
            PolicySourceArn=role_arn, ActionNames=list(actions), ResourceArns=list(resources),
            ContextEntries=entries), "EvaluationResults")

    def block_offerings(self, *, hours: int, instance_type: str | None = None, instance_count: int | None = None,
                        ultraserver_type: str | None = None,
                        ultraserver_count: int | None = None) -> list[dict[str, Any]] | Failed:
        """DescribeCapacityBlockOfferings for one instance type or one UltraServer type (a search: nothing bought)."""
        args: dict[str, Any] = {"CapacityDurationHours": hours}
        for key, value in (("InstanceType", instance_type), ("InstanceCount", instance_count),
                           ("UltraserverType", ultraserver_type), ("UltraserverCount", ultraserver_count)):
            if value is not None:
                args[key] = value
        return self._paged(lambda: self.client("ec2").get_paginator("describe_capacity_block_offerings").paginate(
            **args), "CapacityBlockOfferings")

    def fleet_reservations(self) -> list[dict[str, Any]] | Failed:
        """The capacity reservations tagged with the fleet (the blocks its lifecycle bought or extended)."""
        return self._paged(lambda: self.client("ec2").get_paginator("describe_capacity_reservations").paginate(
            Filters=self._fleet_filter()), "CapacityReservations")

    def trails(self) -> list[dict[str, Any]] | Failed:
        """Every trail that applies to the region (DescribeTrails with shadow trails: multi-region and organisation
        trails created elsewhere too)."""
        def run() -> list[dict[str, Any]]:
            return list(self.client("cloudtrail").describe_trails(includeShadowTrails=True).get("trailList", []))
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def trail_status(self, trail_arn: str) -> dict[str, Any] | Failed:
        return self._answer(lambda: self.client("cloudtrail").get_trail_status(Name=trail_arn))

    def costs_by_usage_type(self, start: str, end: str, record_types: Sequence[str]) -> list[dict[str, Any]] | Failed:
        """Cost Explorer's daily UnblendedCost and UsageQuantity grouped by usage type and the fleet tag (the cost
        collector's grouping, so its row parser reads them), for ``record_types`` (``ResultsByTime``; every page:
        Cost Explorer has no paginator in botocore, it pages with NextPageToken)."""
        def run() -> list[dict[str, Any]]:
            args: dict[str, Any] = {
                "TimePeriod": {"Start": start, "End": end}, "Granularity": "DAILY",
                "Metrics": ["UnblendedCost", "UsageQuantity"],
                "GroupBy": [{"Type": "DIMENSION", "Key": "USAGE_TYPE"}, {"Type": "TAG", "Key": FLEET_TAG}],
                "Filter": {"Dimensions": {"Key": "RECORD_TYPE", "Values": list(record_types)}}}
            out: list[dict[str, Any]] = []
            while True:
                page = self.client("ce", US_EAST_1).get_cost_and_usage(**args)
                out += page.get("ResultsByTime", [])
                if not page.get("NextPageToken"):
                    return out
                args["NextPageToken"] = page["NextPageToken"]
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def export(self, name: str) -> dict[str, Any] | Failed:
        """The Data Export named ``name`` (GetExport: its destination and status), or Failed NotFound."""
        listed = self._paged(lambda: self.client("bcm-data-exports", US_EAST_1).get_paginator("list_exports").paginate(),
                             "Exports")
        if isinstance(listed, Failed):
            return listed
        arns = [e["ExportArn"] for e in listed if e.get("ExportName") == name]
        if not arns:
            return Failed(NOT_FOUND, f"no Data Export named {name}")
        return self.export_at(arns[0])

    def export_at(self, arn: str) -> dict[str, Any] | Failed:
        return self._answer(lambda: self.client("bcm-data-exports", US_EAST_1).get_export(ExportArn=arn))

    def exports(self) -> list[dict[str, Any]] | Failed:
        """Every Data Export of the account, as GetExport answers it (ListExports, then GetExport each)."""
        listed = self._paged(lambda: self.client("bcm-data-exports", US_EAST_1).get_paginator("list_exports").paginate(),
                             "Exports")
        if isinstance(listed, Failed):
            return listed
        out = []
        for arn in [str(e["ExportArn"]) for e in listed]:
            found = self.export_at(arn)
            if isinstance(found, Failed):
                return found
            out.append(found)
        return out

    def objects(self, bucket: str, prefix: str, region: str | None = None) -> list[dict[str, Any]] | Failed:
        """The objects under ``prefix`` (ListObjectsV2, every page)."""
        return self._paged(lambda: self.client("s3", region).get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix), "Contents")

    def object_start(self, bucket: str, key: str, region: str | None = None) -> bytes | Failed:
        """The first :data:`FIRST_BYTES` of an object (GetObject with a Range: a read)."""
        def run() -> bytes:
            answer = self.client("s3", region).get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{FIRST_BYTES - 1}")
            return bytes(answer["Body"].read())
        result: bytes | Failed = self._call(run)
        return result

    def products(self, service_code: str, filters: Mapping[str, str],
                 contains: Mapping[str, str] | None = None) -> list[str] | Failed:
        """The Price List's products for ``filters`` (GetProducts, TERM_MATCH on each) and ``contains`` (CONTAINS:
        an attribute holding the text, e.g. a usage type without its region prefix), every page: JSON texts."""
        def run() -> list[str]:
            pages = self.client("pricing", US_EAST_1).get_paginator("get_products").paginate(
                ServiceCode=service_code, Filters=[
                    *({"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in filters.items()),
                    *({"Type": "CONTAINS", "Field": k, "Value": v} for k, v in (contains or {}).items())])
            return [str(p) for page in pages for p in page.get("PriceList", [])]
        result: list[str] | Failed = self._call(run)
        return result

    def log_events(self, group: str, pattern: str, start: datetime) -> list[dict[str, Any]] | Failed:
        """Up to :data:`MOST_EVENTS` events of ``group`` matching ``pattern`` since ``start`` (FilterLogEvents)."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("logs").get_paginator("filter_log_events").paginate(
                logGroupName=group, filterPattern=pattern, startTime=int(start.timestamp() * 1000))
            return _first(MOST_EVENTS, (e for page in pages for e in page.get("events", [])))
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def assume_role_events(self, start: datetime, end: datetime) -> list[dict[str, Any]] | Failed:
        """Up to :data:`MOST_EVENTS` CloudTrail AssumeRole events (LookupEvents: the last 90 days' management events)."""
        def run() -> list[dict[str, Any]]:
            pages = self.client("cloudtrail").get_paginator("lookup_events").paginate(
                LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": "AssumeRole"}],
                StartTime=start, EndTime=end)
            return _first(MOST_EVENTS, (e for page in pages for e in page.get("Events", [])))
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def metric_sum(self, namespace: str, metric: str, dimensions: Mapping[str, str], start: datetime,
                   end: datetime) -> list[dict[str, Any]] | Failed:
        """GetMetricStatistics' Sum of ``metric`` over [start, end), hourly points."""
        def run() -> list[dict[str, Any]]:
            answer = self.client("cloudwatch").get_metric_statistics(
                Namespace=namespace, MetricName=metric, StartTime=start, EndTime=end, Period=3600,
                Statistics=["Sum"], Dimensions=[{"Name": k, "Value": v} for k, v in dimensions.items()])
            return list(answer.get("Datapoints", []))
        result: list[dict[str, Any]] | Failed = self._call(run)
        return result

    def endpoints(self) -> list[dict[str, Any]] | Failed:
        """The fleet's SageMaker endpoints (tagged), each as DescribeEndpoint answers it."""
        arns = self.tagged("sagemaker:endpoint")
        if isinstance(arns, Failed):
            return arns
        out = []
        for arn in arns:
            found = self.endpoint(arn.rsplit("/", 1)[-1])
            if isinstance(found, Failed):
                return found
            out.append(found)
        return out

    def endpoint(self, name: str) -> dict[str, Any] | Failed:
        return self._answer(lambda: self.client("sagemaker").describe_endpoint(EndpointName=name))

    def model(self, name: str) -> dict[str, Any] | Failed:
        return self._answer(lambda: self.client("sagemaker").describe_model(ModelName=name))

    def endpoint_config(self, name: str) -> dict[str, Any] | Failed:
        return self._answer(lambda: self.client("sagemaker").describe_endpoint_config(EndpointConfigName=name))

    def scalable_targets(self) -> list[dict[str, Any]] | Failed:
        """Application Auto Scaling's targets in the sagemaker namespace (every page)."""
        return self._paged(lambda: self.client("application-autoscaling").get_paginator(
            "describe_scalable_targets").paginate(ServiceNamespace="sagemaker"), "ScalableTargets")

    def target_tags(self, arn: str) -> dict[str, str] | Failed:
        def run() -> dict[str, str]:
            answer = self.client("application-autoscaling").list_tags_for_resource(ResourceARN=arn)
            return dict(answer.get("Tags") or {})
        result: dict[str, str] | Failed = self._call(run)
        return result


def _first(most: int, items: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        out.append(item)
        if len(out) >= most:
            break
    return out


def decode_console(output: str) -> str:
    """EC2's ``Output`` member (base64 of the console's bytes) as text; a value that is not base64 (a stand-in that
    answers plain text) is taken as it is."""
    try:
        return base64.b64decode(output, validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return output

"""CurAnalytics and CurExport: organisation-scale spend from a CUR 2.0 Data Export, queried with Athena.

Two parts, because AWS serves them from different places:

- :class:`CurExport`: the ``AWS::BCMDataExports::Export`` (aws-cdk-lib ``aws_bcmdataexports.CfnExport``): CUR 2.0
  (table ``COST_AND_USAGE_REPORT``), daily granularity, Parquet, overwritten in place, refreshed as the bill changes
  (``SYNCHRONOUS``). Data Exports is served from us-east-1 only (``settings.cost.CUR_EXPORT_REGION``, with its
  sources): the export is created there, whatever the fleet's region (``settings.cost.cur_export_placement_problems``).
- :class:`CurAnalytics`: where the export writes and the collector reads, in the collector's region: the kit's
  bucket (S3-encrypted, SSL-only, versioned, access-logged) whose policy admits ``bcm-data-exports.amazonaws.com``
  and ``billingreports.amazonaws.com`` for this account's exports only (aws:SourceAccount and aws:SourceArn, as the
  Data Exports user guide's policy); a Glue database and table over the export's Parquet objects, partitioned by
  ``billing_period`` with partition projection (no crawler to run); an Athena workgroup that enforces its
  configuration (results encrypted, SSE-S3, into their own bucket; a bytes-scanned cutoff per query; CloudWatch
  metrics); the collector's named queries (neuronfleet_contract.cur); ``grant_query(role)``.

In a us-east-1 stack (or an environment-agnostic one) CurAnalytics creates its export itself. Elsewhere it creates
none, and synth stops until a CurExport in a us-east-1 stack of the same account is given it::

    cur = CurAnalytics(cost_stack, "Cur", export_name="nf-org-cur2")         # e.g. us-west-2
    CurExport(export_stack, "Export", analytics=cur)                          # us-east-1

The export names the bucket across regions the CDK way: the bucket's name is ``PhysicalName.GENERATE_IF_NEEDED``,
so when a stack of another region references it CDK writes one generated name (from the stack, the path, the
account and the region) into both templates: no custom resource (``cross_region_references=True`` would add
Lambda-backed ones, which moto cannot run without Docker), no SSM parameter read across regions, offline at synth.
Both stacks need a concrete account, the same one. The export's stack depends on the bucket's (Data Exports reads
the bucket policy when the export is created). The destination bucket may be in any region: the export's
``S3Region`` is required for that (botocore bcm-data-exports ``S3Destination``; AWS's pages show no region limit).

Deploy in the payer (management) account to see the whole organisation. Sources (read 2026-11-23): the export's
properties from aws-cdk-lib's ``CfnExport`` (installed); the bucket policy from the AWS Data Exports user guide,
"Setting up an Amazon S3 bucket for data exports".
"""

from __future__ import annotations

from datetime import date

import jsii
from aws_cdk import Aws, PhysicalName, RemovalPolicy, Stack, Token
from aws_cdk import aws_athena as athena
from aws_cdk import aws_bcmdataexports as bcm
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from constructs import Construct, IValidation

from neuronfleet_contract.cur import FLEET_TAG_COLUMN, QUERIES, render

from ..core.nag import acknowledge_wildcards
from ..core.problems import InvalidSettings, Problem
from ..core.region import check_in_region
from ..core.rules import ATHENA_MIN_BYTES_SCANNED_CUTOFF
from ..core.storage import secure_bucket
from ..settings.cost import CUR_EXPORT_REGION, cur_export_placement_problems

CUR2_COLUMNS: tuple[tuple[str, str], ...] = (
    ("bill_payer_account_id", "string"), ("line_item_usage_account_id", "string"),
    ("line_item_usage_start_date", "timestamp"), ("line_item_product_code", "string"),
    ("line_item_line_item_type", "string"), ("line_item_usage_type", "string"),
    ("line_item_usage_amount", "double"), ("line_item_unblended_cost", "double"),
    ("line_item_net_unblended_cost", "double"), ("savings_plan_savings_plan_effective_cost", "double"),
    ("reservation_effective_cost", "double"), ("resource_tags", "map<string,string>"),
)
"""The CUR 2.0 columns the export selects and the queries read (CUR 2.0 table dictionary)."""


class CurAnalytics(Construct):
    """Example::

        cur = CurAnalytics(self, "Cur", export_name="nf-org-cur2", bytes_scanned_cutoff=10 * 2**30)
        cur.grant_query(collector.role)
        # outside us-east-1: CurExport(stack_in_us_east_1, "CurExport", analytics=cur)

    ``export_here``: create the export in this construct (default: when the stack is in us-east-1 or
    environment-agnostic); with False, or in another region, a :class:`CurExport` must be given this construct.
    """

    def __init__(self, scope: Construct, construct_id: str, *, export_name: str,
                 bytes_scanned_cutoff: int = 10 * 2**30, prefix: str = "cur2", export_here: bool | None = None,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> None:
        """``removal_policy``: what deleting the stack does to the export, query-result and access-log buckets
        (RETAIN unless asked: the export holds the billing history AWS does not write again)."""
        if bytes_scanned_cutoff < ATHENA_MIN_BYTES_SCANNED_CUTOFF:
            raise InvalidSettings([Problem("bytes_scanned_cutoff", bytes_scanned_cutoff,
                                           "at least 10,000,000 bytes (Athena's minimum per-query cutoff)")],
                                  what="CurAnalytics")
        super().__init__(scope, construct_id)
        self.export_name, self.prefix = export_name, prefix
        self.removal_policy = removal_policy
        logs = secure_bucket(self, "AccessLogs", removal_policy=removal_policy)
        self.bucket = secure_bucket(self, "Exports", versioned=True, access_logs=logs, log_prefix="exports/",
                                    bucket_name=PhysicalName.GENERATE_IF_NEEDED, removal_policy=removal_policy)
        """Where the export writes (named by CDK when the export's stack is in another region)."""
        self.results = secure_bucket(self, "Results", access_logs=logs, log_prefix="results/",
                                     removal_policy=removal_policy)
        self._bucket_policy()
        self._export: CurExport | None = None
        region = Stack.of(self).region
        if export_here if export_here is not None else (Token.is_unresolved(region) or region == CUR_EXPORT_REGION):
            CurExport(self, "Export", analytics=self)
        self.node.add_validation(_HasExport(self))
        self.database = glue.CfnDatabase(self, "Database", catalog_id=Aws.ACCOUNT_ID,
                                         database_input=glue.CfnDatabase.DatabaseInputProperty(
                                             description="neuronfleet CUR 2.0 export"))
        self.table = self._table()
        self.table_name = f"{self.database.ref}.{self.table.ref}"
        """``database.table`` as the queries name it."""
        self.workgroup = athena.CfnWorkGroup(
            self, "WorkGroup", name=f"{export_name}-wg", state="ENABLED",
            description="neuronfleet: CUR 2.0 spend queries (encrypted results, bytes-scanned cutoff)",
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                enforce_work_group_configuration=True, publish_cloud_watch_metrics_enabled=True,
                bytes_scanned_cutoff_per_query=bytes_scanned_cutoff,
                engine_version=athena.CfnWorkGroup.EngineVersionProperty(selected_engine_version="Athena engine version 3"),
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=self.results.s3_url_for_object("results/"),
                    encryption_configuration=athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_S3"))))
        self.named_queries = {name: athena.CfnNamedQuery(
            self, f"Query{''.join(p.capitalize() for p in name.split('_'))}", database=self.database.ref,
            work_group=self.workgroup.ref, name=f"neuronfleet-{name.replace('_', '-')}",
            description=f"neuronfleet: {name.replace('_', ' ')} (last 30 days)",
            query_string=_last_30_days(render(name, table="cur_table", start=_START, end=_END,
                                              fleet_tag_key=FLEET_TAG_COLUMN)).replace(
                "cur_table", self.table_name)) for name in QUERIES}

    @property
    def export(self) -> CurExport | None:
        """The export that writes here (:meth:`attach_export`), or None."""
        return self._export

    def attach_export(self, export: CurExport) -> None:
        """Record ``export`` as the one export writing here (:class:`CurExport` calls it as it is built, once it has
        refused analytics that already have one)."""
        self._export = export

    def _bucket_policy(self) -> None:
        account, partition = Aws.ACCOUNT_ID, Aws.PARTITION
        conditions = {"StringLike": {"aws:SourceAccount": account, "aws:SourceArn": [
            f"arn:{partition}:cur:us-east-1:{account}:definition/*",
            f"arn:{partition}:bcm-data-exports:us-east-1:{account}:export/*"]}}
        principals = [iam.ServicePrincipal("bcm-data-exports.amazonaws.com"),
                      iam.ServicePrincipal("billingreports.amazonaws.com")]
        self.bucket.add_to_resource_policy(iam.PolicyStatement(
            principals=principals, actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects(f"{self.prefix}/*")],
            conditions=conditions))
        self.bucket.add_to_resource_policy(iam.PolicyStatement(
            principals=principals, actions=["s3:GetBucketPolicy"], resources=[self.bucket.bucket_arn],
            conditions=conditions))

    def _table(self) -> glue.CfnTable:
        location = f"s3://{self.bucket.bucket_name}/{self.prefix}/{self.export_name}/data/"
        return glue.CfnTable(self, "Table", catalog_id=Aws.ACCOUNT_ID, database_name=self.database.ref,
                             table_input=glue.CfnTable.TableInputProperty(
                                 table_type="EXTERNAL_TABLE",
                                 partition_keys=[glue.CfnTable.ColumnProperty(name="billing_period", type="string")],
                                 parameters={"classification": "parquet", "projection.enabled": "true",
                                             "projection.billing_period.type": "date",
                                             "projection.billing_period.format": "yyyy-MM",
                                             "projection.billing_period.interval": "1",
                                             "projection.billing_period.interval.unit": "MONTHS",
                                             "projection.billing_period.range": "2024-01,NOW",
                                             "storage.location.template":
                                                 location + "BILLING_PERIOD=${billing_period}/"},
                                 storage_descriptor=glue.CfnTable.StorageDescriptorProperty(
                                     location=location,
                                     input_format="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                                     output_format="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                                     serde_info=glue.CfnTable.SerdeInfoProperty(
                                         serialization_library=(
                                             "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe")),
                                     columns=[glue.CfnTable.ColumnProperty(name=n, type=t) for n, t in CUR2_COLUMNS])))

    def grant_query(self, role: iam.IRole) -> None:
        """Run the named queries: Athena on this workgroup, Glue on this table, the export's objects, the results."""
        stack = Stack.of(self)
        wg = stack.format_arn(service="athena", resource="workgroup", resource_name=self.workgroup.ref)
        glue_arns = [stack.format_arn(service="glue", resource="catalog"),
                     stack.format_arn(service="glue", resource="database", resource_name=self.database.ref),
                     stack.format_arn(service="glue", resource="table",
                                      resource_name=f"{self.database.ref}/{self.table.ref}")]
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["athena:StartQueryExecution", "athena:GetQueryExecution", "athena:GetQueryResults"],
            resources=[wg]))
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["glue:GetDatabase", "glue:GetTable", "glue:GetPartitions"], resources=glue_arns))
        exports, results = self.bucket.arn_for_objects(f"{self.prefix}/*"), self.results.arn_for_objects("results/*")
        role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[exports]))
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["s3:ListBucket", "s3:GetBucketLocation"], resources=[self.bucket.bucket_arn, self.results.bucket_arn]))
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"], resources=[results]))
        acknowledge_wildcards(role, "Athena reads the export's objects under its prefix and writes query results "
                              "under the results prefix of the workgroup's own bucket", resources=(exports, results))


class CurExport(Construct):
    """The CUR 2.0 Data Export of a :class:`CurAnalytics`, in us-east-1 (where AWS serves Data Exports), delivering
    to the analytics' bucket in its own region. Example (a fleet in us-west-2)::

        export_stack = Stack(app, "nf-org-cur-export", env=Environment(account=ACCOUNT, region="us-east-1"))
        CurExport(export_stack, "CurExport", analytics=cost.adapters.athena)

    Raises :class:`InvalidSettings` in a stack of another region, for analytics that already have an export, or
    when the two stacks are not in one concrete account (the bucket's policy admits this account's exports only).
    """

    def __init__(self, scope: Construct, construct_id: str, *, analytics: CurAnalytics) -> None:
        super().__init__(scope, construct_id)
        what = "CUR 2.0 export"
        check_in_region(self, what, cur_export_placement_problems)
        if analytics.export is not None:
            raise InvalidSettings([Problem("analytics", analytics.node.path, (
                f"a CurAnalytics without an export: it has {analytics.export.node.path}"))], what=what)
        here, there = Stack.of(self), Stack.of(analytics)
        same_stack = here.node.path == there.node.path
        if not same_stack:
            for stack in (here, there):
                if Token.is_unresolved(stack.account):
                    raise InvalidSettings([Problem("account", None, (
                        f"a 12-digit account on stack {stack.node.path} (env=Environment(account=...)): the export's "
                        "stack names the bucket of the analytics' stack, in another region, by a name CDK derives "
                        "from the account"))], what=what)
            if here.account != there.account:
                raise InvalidSettings([Problem("account", here.account, (
                    f"{there.account}, the account of {there.node.path}: the bucket's policy admits this account's "
                    "exports only"))], what=what)
            here.add_stack_dependency(there, "the export's bucket and its policy exist before the export")
        columns = ", ".join(c for c, _ in CUR2_COLUMNS)
        self.resource = bcm.CfnExport(self, "Resource", export=bcm.CfnExport.ExportProperty(
            name=analytics.export_name, description="neuronfleet: CUR 2.0 for accelerator spend per fleet",
            data_query=bcm.CfnExport.DataQueryProperty(
                query_statement=f"SELECT {columns} FROM COST_AND_USAGE_REPORT",
                table_configurations={"COST_AND_USAGE_REPORT": {
                    "TIME_GRANULARITY": "DAILY", "INCLUDE_RESOURCES": "FALSE",
                    "INCLUDE_MANUAL_DISCOUNT_COMPATIBILITY": "FALSE", "INCLUDE_SPLIT_COST_ALLOCATION_DATA": "FALSE"}}),
            destination_configurations=bcm.CfnExport.DestinationConfigurationsProperty(
                s3_destination=bcm.CfnExport.S3DestinationProperty(
                    s3_bucket=analytics.bucket.bucket_name, s3_prefix=analytics.prefix, s3_region=there.region,
                    s3_output_configurations=bcm.CfnExport.S3OutputConfigurationsProperty(
                        compression="PARQUET", format="PARQUET", output_type="CUSTOM", overwrite="OVERWRITE_REPORT"))),
            refresh_cadence=bcm.CfnExport.RefreshCadenceProperty(frequency="SYNCHRONOUS")))
        if same_stack:
            self.resource.node.add_dependency(analytics.bucket.policy or analytics.bucket)
        analytics.attach_export(self)


@jsii.implements(IValidation)
class _HasExport:
    """Synth stops for a CurAnalytics that no CurExport writes to."""

    def __init__(self, analytics: CurAnalytics) -> None:
        self.analytics = analytics

    def validate(self) -> list[str]:
        if self.analytics.export is not None:
            return []
        region = Stack.of(self.analytics).region
        return [f"CurAnalytics {self.analytics.node.path} (in {region}) has no CUR 2.0 export: add "
                f"CurExport(<a stack in {CUR_EXPORT_REGION}, same account>, \"CurExport\", analytics=...), "
                f"or let the construct create it in a {CUR_EXPORT_REGION} stack"]


_START, _END = date(1970, 1, 1), date(1970, 1, 2)
"""Stand-in dates replaced by a rolling window in the named queries."""


def _last_30_days(sql: str) -> str:
    return (sql.replace(f"DATE '{_START.isoformat()}'", "date_add('day', -30, current_date)")
            .replace(f"DATE '{_END.isoformat()}'", "current_date"))

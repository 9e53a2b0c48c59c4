"""The cost rows of docs/checks.md as checks: Cost Explorer, Data Exports, the Price List, the kit's overhead."""

from __future__ import annotations

from .capacity import NOT_YET_AUTOMATED
from .registry import Check

BLOCK_FEE = Check(
    "capacity-block-fee", "a Capacity Block fee reads as <region>-CapacityBlockFee:<type>, record type Upfront, on "
    "UnblendedCost", "Cost Explorer: record types Upfront and Refund, group by usage type, daily, Unblended",
    manual=NOT_YET_AUTOMATED)
EXPORT_DELIVERY = Check(
    "data-exports-delivery", "Data Exports delivers into a bucket outside us-east-1",
    "a day after deploy, aws s3 ls s3://<bucket>/cur2/", manual=NOT_YET_AUTOMATED)
PRICE_LIST_FILTERS = Check(
    "price-list-filters", "the Price List filters single out one product per type",
    "aws pricing get-products --region us-east-1 --service-code AmazonEC2 --filters "
    "Type=TERM_MATCH,Field=instanceType,Value=trn1.32xlarge Type=TERM_MATCH,Field=regionCode,Value=us-east-2 "
    "Type=TERM_MATCH,Field=operatingSystem,Value=Linux Type=TERM_MATCH,Field=tenancy,Value=Shared "
    "Type=TERM_MATCH,Field=preInstalledSw,Value=NA Type=TERM_MATCH,Field=capacitystatus,Value=Used returns one "
    "product", manual=NOT_YET_AUTOMATED)
CUR_RESOURCE_TAGS = Check(
    "cur-resource-tags", "a CUR 2.0 CSV export writes resource_tags as a JSON object in its cell",
    "aws s3 cp s3://<bucket>/<prefix>/data/... - | zcat | head -2 shows the resource_tags cell",
    manual=NOT_YET_AUTOMATED)
FSX_PRICE = Check(
    "fsx-price", "FSx for Lustre PERSISTENT_2 SSD rates per GB-month",
    "aws pricing get-products --region us-east-1 --service-code AmazonFSx --filters "
    "Type=TERM_MATCH,Field=regionCode,Value=us-east-2 Type=TERM_MATCH,Field=deploymentOption,Value=Persistent_2",
    manual=NOT_YET_AUTOMATED)
REGION_RATES = Check(
    "region-overhead-rates", "the us-east-2 rates of interface endpoints, public IPv4 and EKS clusters",
    "aws pricing get-products --service-code AmazonVPC --filters "
    "Type=TERM_MATCH,Field=usagetype,Value=USE2-VpcEndpoint-Hours", manual=NOT_YET_AUTOMATED)
QUOTED_RATES = Check(
    "quoted-rates", "CloudWatch alarm and dashboard rates and the NAT gateway rates",
    "the CloudWatch and VPC pricing pages for US East (Ohio)", manual=NOT_YET_AUTOMATED)
FUNCTION_DURATIONS = Check(
    "function-durations", "how long the scheduled functions run",
    "aws logs insights on the functions' REPORT lines (Billed Duration)", manual=NOT_YET_AUTOMATED)
SERVICE_SOURCE_KEYS = Check(
    "service-source-keys", "ECS and VPC Flow Logs send aws:SourceAccount/aws:SourceArn when they assume their roles",
    "CloudTrail AssumeRole events of the job role and the flow-log role: additionalEventData/requestParameters show "
    "the source account and ARN", manual=NOT_YET_AUTOMATED)

CHECKS: tuple[Check, ...] = (BLOCK_FEE, EXPORT_DELIVERY, PRICE_LIST_FILTERS, CUR_RESOURCE_TAGS, FSX_PRICE,
                             REGION_RATES, QUOTED_RATES, FUNCTION_DURATIONS, SERVICE_SOURCE_KEYS)

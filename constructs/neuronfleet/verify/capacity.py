"""The Capacity Block rows of docs/checks.md as checks: offerings, the lifecycle role's rights, the purchase trail."""

from __future__ import annotations

from .registry import Check

NOT_YET_AUTOMATED = "not automated yet (a read-only check is possible: the command is listed for you to run)"

BLOCK_OFFERINGS = Check(
    "capacity-block-offerings", "Capacity Blocks are sold for trn2.3xlarge, and u-trn2x64 is EC2's UltraServer type "
    "name", "aws ec2 describe-capacity-block-offerings --instance-type trn2.3xlarge --instance-count 1 "
    "--capacity-duration-hours 24 (and --ultraserver-type u-trn2x64 --ultraserver-count 1)", manual=NOT_YET_AUTOMATED)
ULTRASERVER_BLOCK = Check(
    "ultraserver-block", "a Trn2 UltraServer block's instances stop 60 min before its end; 182 days bound a block with "
    "its extensions; PurchaseCapacityBlock's tags apply to capacity-reservation",
    "describe-capacity-blocks and the expiration warning of a real UltraServer block; purchase-capacity-block "
    "--dry-run --tag-specifications ... (docs/capacity-blocks.md)", manual="it needs a real UltraServer block and a "
    "dry-run purchase")
EXTENSION_VISIBLE = Check(
    "extension-visible", "EC2 shows a Capacity Block extension in its describes within 5 minutes",
    "after an extension: time how long aws ec2 describe-capacity-block-extension-history --capacity-reservation-ids "
    "<id> and aws ec2 describe-capacity-reservations --capacity-reservation-ids <id> --query "
    "'CapacityReservations[].EndDate' take to show it", manual="it times an extension (a purchase)")
LIFECYCLE_EXTENSION_RIGHT = Check(
    "lifecycle-extension-right", "the lifecycle role's extension right is bound by aws:ResourceTag/neuronfleet:fleet",
    "aws iam simulate-principal-policy --policy-source-arn <role> --action-names ec2:PurchaseCapacityBlockExtension "
    "--resource-arns <reservation arn> --context-entries ContextKeyName=aws:ResourceTag/neuronfleet:fleet,"
    "ContextKeyValues=<fleet>,ContextKeyType=string", manual=NOT_YET_AUTOMATED)
PURCHASE_TRAIL = Check(
    "purchase-trail", "a logging trail feeds EventBridge the purchase calls, and their records carry the offering, "
    "reservation and fee members", "aws cloudtrail describe-trails lists a logging trail covering the region; after "
    "the first extension, aws cloudtrail lookup-events --lookup-attributes AttributeKey=EventName,"
    "AttributeValue=PurchaseCapacityBlockExtension --max-results 1", manual=NOT_YET_AUTOMATED)

CHECKS: tuple[Check, ...] = (BLOCK_OFFERINGS, ULTRASERVER_BLOCK, EXTENSION_VISIBLE, LIFECYCLE_EXTENSION_RIGHT,
                             PURCHASE_TRAIL)

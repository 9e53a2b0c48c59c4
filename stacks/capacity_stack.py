from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuronfleet import CapacityLifecycle, GpuPool, TrainiumCluster
from neuronfleet.capacity.purchases import CapacityPurchaseAnnouncements
from neuronfleet.eks.cluster import CapacityBlockNodegroup
from neuronfleet.settings.capacity import CapacityPolicySettings

FOLLOW_ONLY = CapacityPolicySettings(max_upfront_fee_usd=Decimal(0), max_usd_per_instance_hour=Decimal(0))
"""The policy of a fleet file without ``capacity_policy`` whose EKS Capacity Block node groups still follow their
blocks: nothing bought or extended (no money allowed, extensions off), the default checkpoint lead."""


class CapacityStack(Stack):
    """The fleet's Capacity Block lifecycle (CapacityLifecycle) and the announcement of every Capacity Block purchase in
    the account (CapacityPurchaseAnnouncements): present when the fleet file has a capacity_policy and Batch
    clusters, or EKS Capacity Block node groups (``node_groups``: they follow their blocks, with :data:`FOLLOW_ONLY`
    when the fleet file has no policy)."""

    def __init__(self, scope: Construct, construct_id: str, *, fleet_name: str, policy: CapacityPolicySettings,
                 clusters: Mapping[str, TrainiumCluster], alerts_topic: sns.ITopic, pool: GpuPool | None,
                 prices: Mapping[str, Mapping[str, str]], training_azs: Sequence[str],
                 node_groups: Sequence[CapacityBlockNodegroup] = (), **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.lifecycle = CapacityLifecycle(self, "CapacityLifecycle", fleet=fleet_name, clusters=clusters,
                                           topic=alerts_topic, policy=policy, pool=pool, prices=prices,
                                           training_azs=training_azs, node_groups=node_groups)
        self.purchases = CapacityPurchaseAnnouncements(self, "CapacityPurchases", topic=alerts_topic, fleet=fleet_name)

"""The node-group capacity alerts' contract: which health issues of an EKS managed node group mean it cannot get
nodes, how often the fleet's Neuron node groups are looked at, and what the function is told (built by
``neuronfleet.eks.capacity_alerts.NodegroupCapacityAlerts``, read once per container by
``capacity_alert/nodegroup_handler.py``).

Why a scheduled look and not the Batch path's Auto Scaling launch events: EKS names a node group's Auto Scaling group
itself (``eks-<node group>-<uuid>``, the aws-cli example), so no rule can match it by a name the stack knows. The
sound handle is the node group's own ARN: ``eks:DescribeNodegroup`` returns ``resources.autoScalingGroups[].name``
and ``health.issues[]`` (``code``, ``message``, ``resourceIds``), botocore 1.44.5's eks model, read 2026-11-23.

The facts (botocore 1.44.5 eks ``Issue.code`` documentation and the ``NodegroupIssueCode`` enum, read 2026-11-23;
tests/unit/test_nodegroup_capacity.py pins them): no code names EC2's capacity as such. A refused launch is
``AsgInstanceLaunchFailures`` ("Your Auto Scaling group is experiencing failures while attempting to launch
instances"), EC2's words for the cause in its ``message``; the account's instance quota is ``InstanceLimitExceeded``;
subnets out of addresses ``InsufficientFreeAddresses``; instances that launched but cannot join
``NodeCreationFailure``. These four are :data:`LAUNCH_ISSUES`: the node group cannot get the nodes it asks for.
Whether a message carries EC2's capacity words on a real Capacity Block or ODCR node group is NOT confirmed by any
public example (none exists for a node group health issue); the announcement quotes AWS's message whatever it says.

Pure: no boto3, no Powertools, no CDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import environment
from .capacity_alert import GpuPoolQueue, gpu_pool_variable
from .environment import variable

LAUNCH_ISSUES = {
    "AsgInstanceLaunchFailures": "its Auto Scaling group fails to launch instances",
    "InstanceLimitExceeded": "the account may launch no more instances of this type (an EC2 quota)",
    "InsufficientFreeAddresses": "its subnets have too few free IP addresses for new nodes",
    "NodeCreationFailure": "launched instances cannot register with the cluster",
}
"""Node group health issue codes (botocore 1.44.5 eks NodegroupIssueCode) that keep a node group from its nodes."""

SCAN_MINUTES = 5
"""How often the fleet's Neuron node groups are described: an issue is announced at most this late (EventBridge's
rate schedule; one DescribeNodegroup per node group per run)."""

UNREADABLE_KIND = "nodegroup-unreadable"
"""The ledger's kind of the lasting condition "this node group's description cannot be read" (one per node group:
announced once when it starts and once when it ends)."""
UNREADABLE_METRIC = "UnreadableNodegroups"
"""Count of node groups whose description a run could not read (CAPACITY_NAMESPACE, the capacity alerts' service
dimensions), published by every run that meets one."""

CONDITION_KIND = "nodegroup-launch"
"""The announcements ledger's kind of the lasting condition "this node group cannot get its nodes" (one per node
group: announced when it starts and when it ends, once per episode)."""


@dataclass(frozen=True)
class NodegroupAlertConfig(environment.Configured):
    cluster_name: str = field(metadata=variable("EKS_CLUSTER_NAME", allowed="the EKS cluster's name"))
    """The EKS cluster (``EKS_CLUSTER_NAME``)."""
    node_groups: tuple[str, ...] = field(metadata=variable(
        "EKS_NODE_GROUPS", allowed="a JSON list of node group names", decode=lambda d: _node_groups(d)))
    """The fleet's Neuron node groups of that cluster (``EKS_NODE_GROUPS``, JSON list of names)."""
    topic_arn: str = field(metadata=variable("ALERTS_TOPIC_ARN", allowed="the ARN of the fleet's SNS topic"))
    """The fleet's SNS topic (``ALERTS_TOPIC_ARN``)."""
    ledger_table: str = field(metadata=variable("ANNOUNCEMENTS_TABLE", allowed="the name of the announcements table"))
    """What has been announced (``ANNOUNCEMENTS_TABLE``; neuronfleet_runtime.announcements)."""
    pool: GpuPoolQueue | None = field(default=None, metadata=gpu_pool_variable())
    """What the GPU fallback pool can take (``GPU_POOL``, as for the capacity alerts), when the fleet has one."""


def _node_groups(doc: Any) -> tuple[str, ...]:
    groups = environment.strings(doc)
    if not groups:
        raise ValueError("at least one node group name")
    return groups

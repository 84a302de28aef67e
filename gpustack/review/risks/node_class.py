"""Risks in Karpenter pools: the EC2NodeClass a NodePool's nodes are made from changes.

The node class is not a size or a shape: it holds the nodes' AMI, IAM role (instance profile), security groups,
subnets and userData. A change swaps what every node of the pool runs and what it may do in the AWS account, and
Karpenter drifts every node of the pool onto the new class. Provider changes are cloud-pool-replaced's (cloud.py).
"""

from __future__ import annotations

from gpustack.review.risk import Level, Risk
from gpustack.review.risks.scheduling import running_on
from gpustack.review.snapshot import Snapshot


def node_class_changed(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A Karpenter pool's nodeClass names another EC2NodeClass: every node is replaced by one made from it."""
    risks = []
    for name in sorted(set(before.pools) & set(after.pools)):
        old, new = before.pools[name].cloud, after.pools[name].cloud
        if old is None or new is None or old.provider != "karpenter" or new.provider != "karpenter":
            continue
        if old.node_class == new.node_class:
            continue
        change = f"nodeClass {old.node_class} -> {new.node_class}"
        risks.append(
            Risk(
                "karpenter-node-class-changed",
                Level.HIGH,
                f"Karpenter pool '{name}' moves to another EC2NodeClass: {change}",
                f"The NodePool of '{name}' will make its nodes from the EC2NodeClass '{new.node_class}' instead of "
                f"'{old.node_class}': another AMI, IAM role, security groups and userData, whatever that class holds. "
                "Karpenter drifts every node of the pool onto it, so every running pod of the pool is evicted, and "
                "the new nodes run with the new class's permissions in the AWS account.",
                f"Review the EC2NodeClass '{new.node_class}' itself (its role, AMI and userData) before merging; "
                "check the pool's disruption budget, or make the change in a maintenance window.",
                workloads=running_on(before, [name]),
                pools=(name,),
                details=(change,),
            )
        )
    return risks

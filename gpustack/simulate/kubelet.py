"""Pods that name their node (`spec.nodeName`): no scheduler, only the kubelet's admission on that node.

kube-scheduler never sees such a pod, so cordons and NoSchedule taints do not stop it; the kubelet's
admission (pkg/kubelet/lifecycle/predicate.go, generalFilter) does check resources (the scheduler's
AdmissionCheck: pods first, then each short resource), required node affinity, and NoExecute taints, and
takes the first failure. A rejected pod ends Failed, with the event `<reason> <message>` and the status
message `Pod was rejected: <message>` (kubelet.go rejectPod). A pod bound to a node that does not exist
stays Pending until the pod garbage collector deletes it (gc_controller.go, DisruptionTarget condition).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Pod
from gpustack.simulate.pods import CPU, MEMORY, PODS

NODE_GONE_REASON = "DeletionByPodGC"
NODE_GONE_MESSAGE = "PodGC: node no longer exists"
REJECTED = "Pod was rejected: "


@dataclass(frozen=True)
class Refused:
    event: str  # the kubelet's event reason (OutOfnvidia.com/gpu, NodeAffinity, ...), or PodGC's condition reason
    message: str

    @property
    def failed(self) -> bool:
        """The kubelet rejected it: the pod is Failed, and no longer counts toward quota."""
        return self.message.startswith(REJECTED)


def _order(resource: str) -> tuple[int, str]:
    # noderesources.Fits checks pods, cpu, memory, ephemeral-storage, then the extended resources.
    fixed = {PODS: 0, CPU: 1, MEMORY: 2, "ephemeral-storage": 3}
    return (fixed.get(resource, 4), resource)


def _insufficient(cluster: Cluster, pod: Pod, node_index: int) -> Refused | None:
    node = cluster.nodes[node_index]
    used = cluster.used[node_index]
    wanted = dict(pod.shape.requests)
    wanted[PODS] = 1
    for resource in sorted(wanted, key=_order):
        capacity = node.capacity(resource)
        if capacity is None:
            continue
        have = used.get(resource, 0)
        if have + wanted[resource] > capacity:
            # The kubelet counts cpu in millicores and everything else in base units, as the simulator does.
            message = (
                f"Node didn't have enough resource: {resource}, requested: {wanted[resource]}, "
                f"used: {have}, capacity: {capacity}"
            )
            return Refused(f"OutOf{resource}", REJECTED + message)
    return None


def admit_by_name(cluster: Cluster, pod: Pod) -> int | Refused:
    """Bind a pod that names its node, as the kubelet admits it; the node index, or why it never runs."""
    name = pod.shape.node_name
    index = next((i for i, node in enumerate(cluster.nodes) if node.name == name), None)
    if index is None:
        return Refused(NODE_GONE_REASON, NODE_GONE_MESSAGE)
    refused = _insufficient(cluster, pod, index)
    if refused is not None:
        return refused
    node = cluster.nodes[index]
    if not pod.shape.matches_node(node.labels, node.name):  # nodeSelector and required node affinity
        return Refused("NodeAffinity", REJECTED + "Predicate NodeAffinity failed")
    if any(t.effect == "NoExecute" and not pod.shape.tolerates(t) for t in node.taints):
        return Refused("TaintToleration", REJECTED + "Predicate TaintToleration failed")
    cluster.bind(pod, index)
    return index

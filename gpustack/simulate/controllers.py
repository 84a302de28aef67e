"""How a workload controller reports the API server refusing a pod it creates (the FailedCreate event).

- A Deployment's ReplicaSet creates pods with `generateName: <replicaset>-`, the ReplicaSet being
  `<deployment>-<pod-template-hash>`; the API server names the pod (rest.BeforeCreate) before its validating
  admission (ResourceQuota, LimitRanger) runs, so the refusal names the generated pod, and the ReplicaSet
  controller records `Error creating: <refusal>` on the ReplicaSet (pkg/controller/controller_utils.go,
  RealPodControl.createPods: `Eventf(object, Warning, FailedCreatePodReason, "Error creating: %v", err)`). Real
  events read `Error creating: pods "web-75fbf879df-7hkms" is forbidden: exceeded quota: ...`.
  The pod-template-hash is Go's FNV hash of the template's printed struct, which gpustack cannot reproduce: a
  cluster snapshot that shows the Deployment's pods gives it (their `pod-template-hash` label), else it reads
  `<hash>`. The generated suffix is random: the simulated pod's index stands in for it.
- A Job creates pods the same way (`generateName: <job>-`, or `<job>-<index>-` for an Indexed Job), with the same
  event; the simulated pod's name (`<job>-<index>`) stands in for the generated one.
- A StatefulSet names its pods itself and words its own event (stateful_pod_control.go, recordPodEvent):
  `create Pod web-2 in StatefulSet web failed error: <refusal>`.
- Pods created directly, and a VolcanoJob's pods (Volcano's job controller words its own event), get the API
  server's text as it is.
"""

from __future__ import annotations

from gpustack.model import WorkloadKind
from gpustack.simulate.demand import Pod

ERROR_CREATING = "Error creating: "
UNKNOWN_HASH = "<hash>"


def generated_name(pod: Pod) -> str:
    """The name the API server gives a controller's pod (a stand-in where the cluster's part is random)."""
    workload = pod.source.workload
    if workload is None or workload.kind is not WorkloadKind.DEPLOYMENT:
        return pod.name
    deployment, _, index = pod.name.rpartition("-")
    replica_set = pod.source.replica_set or f"{deployment}-{UNKNOWN_HASH}"
    return f"{replica_set}-{index}"


def failed_create(pod: Pod, refusal: str) -> str:
    """The API server's refusal (`pods "<pod.name>" is forbidden: ...`) as the pod's creator records it."""
    workload = pod.source.workload
    if workload is None:
        return refusal
    if workload.kind is WorkloadKind.STATEFUL_SET:
        statefulset = pod.name.rpartition("-")[0]
        return f"create Pod {pod.name} in StatefulSet {statefulset} failed error: {refusal}"
    if workload.kind in (WorkloadKind.DEPLOYMENT, WorkloadKind.JOB):
        named = refusal.replace(f'pods "{pod.name}"', f'pods "{generated_name(pod)}"', 1)
        return ERROR_CREATING + named
    return refusal

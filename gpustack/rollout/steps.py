"""The kubectl steps of one wave: cordon, drain GPU pods, relabel and retaint, wait for MIG and resources, uncordon.

Every command is safe to run twice (cordon, label --overwrite, server-side apply, drain), or is run through a
check first (removing a taint); waits are bounded, so a stuck node stops the rollout instead of hanging it.
"""

from __future__ import annotations

from gpustack.names import MIG_CONFIG_LABEL, WORKLOAD_LABEL
from gpustack.rollout.model import DRAIN_TIMEOUT_S, MIG_TIMEOUT_S, RESOURCES_TIMEOUT_S, Action, Step
from gpustack.rollout.nodes import NodeChange
from gpustack.taints import taint_text

MIG_STATE_LABEL = "nvidia.com/mig.config.state"


def jsonpath_key(name: str) -> str:
    """A label or resource name as a kubectl JSONPath member: dots inside the name are escaped."""
    return name.replace(".", "\\.")


class StepIds:
    """Step ids unique within a phase: `<phase>.<nn>-<action>`."""

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.count = 0

    def next(self, action: Action) -> str:
        self.count += 1
        return f"{self.phase}.{self.count:02d}-{action}"


def cordon(ids: StepIds, node: str) -> Step:
    return Step(ids.next(Action.CORDON), Action.CORDON, f"cordon {node}", ("kubectl", "cordon", node), node=node)


def drain(ids: StepIds, node: str) -> Step:
    # Only gpustack's workload pods: the eviction API honours their PodDisruptionBudgets; DaemonSets stay.
    command = (
        "kubectl",
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        f"--pod-selector={WORKLOAD_LABEL}",
        f"--timeout={DRAIN_TIMEOUT_S}s",
    )
    return Step(
        ids.next(Action.DRAIN),
        Action.DRAIN,
        f"evict gpustack's GPU pods from {node}",
        command,
        timeout_s=DRAIN_TIMEOUT_S,
        node=node,
    )


def relabel(ids: StepIds, change: NodeChange) -> list[Step]:
    node = change.node
    steps: list[Step] = []
    labels = [f"{key}={value}" for key, value in change.set_labels]
    removed = [f"{key}-" for key in change.removed_labels]
    if change.mig_reconfigures:
        # A stale `success` would end the wait before the MIG manager starts; it writes the label anew.
        removed.append(f"{MIG_STATE_LABEL}-")
    if change.mig_reconfigures and change.mig_label_unchanged:
        # The config keeps its name but not its content: the MIG manager only acts when the label changes
        # (NVIDIA/mig-parted#108), so take the label off first and set it again below.
        removed.append(f"{MIG_CONFIG_LABEL}-")
        assert change.new is not None and change.new.mig_config is not None
        labels.append(f"{MIG_CONFIG_LABEL}={change.new.mig_config}")
    if removed:
        steps.append(
            Step(
                ids.next(Action.LABEL),
                Action.LABEL,
                f"remove labels {', '.join(k.rstrip('-') for k in removed)} from {node}",
                ("kubectl", "label", "node", node, *removed),
                node=node,
            )
        )
    if labels:
        steps.append(
            Step(
                ids.next(Action.LABEL),
                Action.LABEL,
                f"label {node}: {', '.join(labels)}",
                ("kubectl", "label", "node", node, *labels, "--overwrite"),
                node=node,
            )
        )
    return steps


def retaint(ids: StepIds, change: NodeChange) -> list[Step]:
    node = change.node
    steps = [
        Step(
            ids.next(Action.UNTAINT),
            Action.UNTAINT,
            f"remove taint {key}:{effect} from {node}",
            ("kubectl", "taint", "node", node, f"{key}:{effect}-"),
            node=node,
        )
        for key, _, effect in change.removed_taints
    ]
    if change.added_taints:
        texts = [taint_text(t) for t in change.added_taints]
        steps.append(
            Step(
                ids.next(Action.TAINT),
                Action.TAINT,
                f"taint {node}: {', '.join(texts)}",
                ("kubectl", "taint", "node", node, *texts, "--overwrite"),
                node=node,
            )
        )
    return steps


def wait_for_mig(ids: StepIds, node: str) -> Step:
    member = jsonpath_key(MIG_STATE_LABEL)
    return Step(
        ids.next(Action.WAIT_MIG),
        Action.WAIT_MIG,
        f"wait until the MIG manager reports {MIG_STATE_LABEL}=success on {node}",
        (
            "kubectl",
            "wait",
            f"node/{node}",
            f"--for=jsonpath={{.metadata.labels.{member}}}=success",
            f"--timeout={MIG_TIMEOUT_S}s",
        ),
        timeout_s=MIG_TIMEOUT_S,
        node=node,
    )


def wait_for_resources(ids: StepIds, change: NodeChange) -> list[Step]:
    assert change.new is not None
    node = change.node
    return [
        Step(
            ids.next(Action.WAIT_RESOURCE),
            Action.WAIT_RESOURCE,
            f"wait until {node} advertises {units} {resource}",
            (
                "kubectl",
                "wait",
                f"node/{node}",
                f"--for=jsonpath={{.status.allocatable.{jsonpath_key(resource)}}}={units}",
                f"--timeout={RESOURCES_TIMEOUT_S}s",
            ),
            timeout_s=RESOURCES_TIMEOUT_S,
            node=node,
        )
        for resource, units in change.new.advertised
    ]


def uncordon(ids: StepIds, node: str) -> Step:
    return Step(
        ids.next(Action.UNCORDON), Action.UNCORDON, f"uncordon {node}", ("kubectl", "uncordon", node), node=node
    )


def wave_steps(ids: StepIds, changes: list[NodeChange], drains: bool) -> list[Step]:
    """All nodes of a wave go out together, are changed, and come back once each advertises its new resources."""
    steps: list[Step] = []
    if drains:
        steps += [cordon(ids, c.node) for c in changes]
        steps += [drain(ids, c.node) for c in changes]
    for change in changes:
        steps += relabel(ids, change)
        steps += retaint(ids, change)
    steps += [wait_for_mig(ids, c.node) for c in changes if c.mig_reconfigures]
    needs_wait = [c for c in changes if c.new is not None and (drains or c.old is None)]
    for change in needs_wait:
        steps += wait_for_resources(ids, change)
    if drains:
        steps += [uncordon(ids, c.node) for c in changes]
    return steps

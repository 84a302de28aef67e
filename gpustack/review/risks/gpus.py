"""Risks in how GPUs are cut and shared.

MIG re-partitioning, renamed resources, weaker isolation, and the device plugin chart that advertises them.
"""

from __future__ import annotations

from decimal import Decimal

from gpustack.mig import index_ranges
from gpustack.model import NodePool, SharingStrategy, Stack
from gpustack.offers import Isolation
from gpustack.quantity import GIB, format_gib, parse_quantity
from gpustack.review.layouts import MIG_OFF, GpuState, gpu_states
from gpustack.review.risk import Level, Risk
from gpustack.review.risks.scheduling import naming, naming_text
from gpustack.review.risks.wording import plural, quoted, sorted_names
from gpustack.review.snapshot import Snapshot

ISOLATION_RANK: dict[str, int] = {
    Isolation.EXCLUSIVE: 4,
    Isolation.HARDWARE: 3,
    Isolation.MPS_LIMITS: 2,
    Isolation.SOFTWARE: 1,
    Isolation.NONE: 0,
}

ISOLATION_WORDS: dict[str, str] = {
    Isolation.EXCLUSIVE: "a whole GPU per unit",
    Isolation.HARDWARE: "MIG slices with their own memory and compute",
    Isolation.MPS_LIMITS: "MPS clients with memory and thread limits but one fault domain",
    Isolation.SOFTWARE: "HAMi limits enforced in the CUDA library",
    Isolation.NONE: "time-slices with no memory or fault isolation",
}


def mig_repartition(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A node's GPUs get a different MIG layout (or MIG turned on or off): GPU reset, pods on them killed."""
    changes: dict[str, list[tuple[str, str]]] = {}  # after pool -> (node, detail)
    hit: dict[str, set[str]] = {}  # after pool -> workloads whose pods may sit on a changed GPU
    # Pool name -> its GPUs' states, once per pool: every node of a pool has the same.
    old_states = {name: gpu_states(pool) for name, pool in before.pools.items()}
    new_states = {name: gpu_states(pool) for name, pool in after.pools.items()}
    for node, new_pool in after.node_pools.items():
        old_pool = before.node_pools.get(node)
        if old_pool is None:  # a node new to the blueprint: its current state is unknown, not a change we can see
            continue
        old, new = old_states[old_pool.name], new_states[new_pool.name]
        changed = [i for i in sorted(set(old) & set(new)) if old[i][0] != new[i][0]]
        if not changed:
            continue
        moves = sorted({(old[i][1], new[i][1]) for i in changed})
        detail = "; ".join(
            f"GPUs {index_ranges(i for i in changed if (old[i][1], new[i][1]) == move)}: {move[0]} -> {move[1]}"
            for move in moves
        )
        changes.setdefault(new_pool.name, []).append((node, detail))
        hit.setdefault(new_pool.name, set()).update(_workloads_on_gpus(before, old_pool, [old[i][0] for i in changed]))
    risks = []
    for pool, entries in sorted(changes.items()):
        nodes = tuple(node for node, _ in entries)
        toggles = any(MIG_OFF in detail for _, detail in entries)
        reset = "MIG mode changes, which needs a GPU reset (on some systems a reboot)" if toggles else "GPUs are reset"
        risks.append(
            Risk(
                "mig-repartition",
                Level.HIGH,
                f"MIG re-partitioning in pool '{pool}' on {plural(len(nodes), 'node')}",
                f"The MIG manager re-partitions GPUs on {plural(len(nodes), 'node')}: each node's GPU work is "
                f"drained (device plugin, GPU Feature Discovery and DCGM stop), the MIG instances are destroyed and "
                f"re-created ({reset}), and running pods on those GPUs are killed. Until the new layout is in place "
                "the node advertises none of its MIG devices.",
                "Cordon and drain the nodes before applying (one at a time to keep capacity), then wait for the "
                "node label nvidia.com/mig.config.state=success before uncordoning.",
                nodes=nodes,
                workloads=sorted_names(hit[pool]),
                pools=(pool,),
                details=tuple(f"{node}: {detail}" for node, detail in entries),
            )
        )
    return risks


def _workloads_on_gpus(before: Snapshot, pool: NodePool, states: list[GpuState]) -> list[str]:
    """The old pool's workloads whose pods can be on GPUs in these states (by the MIG resources they carve)."""
    if MIG_OFF in states:  # whole GPUs: any of the pool's GPU pods may hold one
        return before.workloads_on(pool.name)
    profiles = {profile for state in states if isinstance(state, tuple) for profile, _ in state}
    resources = {o.resource for o in before.offers(pool.name) if o.profile in profiles}
    return [
        w
        for w in before.workloads_on(pool.name)
        if (requests := before.requests(w)) is not None and resources & set(requests.as_dict())
    ]


def _never_advertised(pool: NodePool) -> bool:
    """`sharing.strategy: auto` is left to `gpustack recommend`, and compile refuses it: such a pool never ran with
    the menu validate resolves it against (every MIG profile beside whole GPUs), so nothing of it is renamed or
    weakened on a cluster when recommend --write (or a hand) chooses the sharing."""
    return pool.sharing.strategy is SharingStrategy.AUTO


def resource_renamed(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A sharing-mode change makes the pool advertise other resource names: running pods' requests are stranded."""
    risks = []
    for name in sorted(set(before.pools) & set(after.pools)):
        old_pool, new_pool = before.pools[name], after.pools[name]
        if naming(old_pool) == naming(new_pool) or _never_advertised(old_pool):
            continue
        old_names = [o.resource for o in before.offers(name)]
        new_names = {o.resource for o in after.offers(name)}
        gone = [r for r in old_names if r not in new_names]
        if not gone:
            continue
        stranded = sorted_names(
            w
            for w in before.workloads_on(name)
            if (requests := before.requests(w)) is not None and any(r in gone for r in requests.as_dict())
        )
        now = ", ".join(o.resource for o in after.offers(name))
        risks.append(
            Risk(
                "resource-renamed",
                Level.HIGH if stranded else Level.MEDIUM,
                f"Pool '{name}' stops advertising {', '.join(gone)} (sharing: {naming_text(old_pool)} -> "
                f"{naming_text(new_pool)})",
                f"The device plugin will advertise {now} instead. Running pods keep their GPUs until they stop, but "
                f"they request {', '.join(gone)}, which no node of the pool offers any more: a restarted pod fails "
                "admission, a new one stays Pending, and quotas on the old name stop counting."
                + (
                    f" Stranded: {quoted(stranded)}."
                    if stranded
                    else " No workload of the blueprint asks for it; pods from outside the blueprint may."
                ),
                "Roll the affected workloads right after the device plugin picks up the new config, or move them to "
                "another pool first; expect their pods to restart.",
                nodes=sorted_names(n for n in new_pool.nodes if n in old_pool.nodes),
                workloads=stranded,
                pools=(name,),
            )
        )
    return risks


def _weakest(snapshot: Snapshot, pool: str) -> str | None:
    units = [o for o in snapshot.offers(pool) if o.memory_gib is not None]
    return min((str(o.isolation) for o in units), key=ISOLATION_RANK.__getitem__, default=None)


def isolation_weakened(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A pool's GPUs give less isolation than before: pods that had a GPU (or slice) to themselves now share."""
    risks = []
    for name in sorted(set(before.pools) & set(after.pools)):
        old, new = _weakest(before, name), _weakest(after, name)
        if old is None or new is None or ISOLATION_RANK[new] >= ISOLATION_RANK[old]:
            continue
        if _never_advertised(before.pools[name]):
            continue
        tenants = sorted_names(after.context.tenants_by_pool.get(name, ()) if after.context is not None else ())
        risks.append(
            Risk(
                "isolation-weakened",
                Level.MEDIUM if len(tenants) > 1 else Level.LOW,
                f"Pool '{name}' isolation drops from {old} to {new}",
                f"Pool '{name}' goes from {ISOLATION_WORDS[old]} to {ISOLATION_WORDS[new]}: one pod's "
                "out-of-memory, crash or noisy kernel can now hurt the pods that share its GPU"
                + (f", across tenants {quoted(tenants)}." if len(tenants) > 1 else "."),
                "Keep tenants that must not affect each other on separate pools.",
                nodes=after.pools[name].nodes,
                workloads=tuple(after.workloads_on(name)),
                pools=(name,),
                tenants=tenants,
            )
        )
    return risks


def _unit_memory(snapshot: Snapshot, pool: str) -> Decimal | None:
    """GiB one GPU unit of a pool can use; None for MIG pools (mig-repartition covers those) or unknown GPUs."""
    if snapshot.pools[pool].sharing.strategy is SharingStrategy.MIG:
        return None
    units = [o.memory_gib for o in snapshot.offers(pool) if o.memory_gib is not None]
    return units[0] if len(units) == 1 else None


def _memory_need(snapshot: Snapshot, workload: str) -> Decimal | None:
    """Bytes of GPU memory a workload says each of its units needs (gpu.memory), if it says."""
    memory = snapshot.workloads[workload].gpu.memory
    return None if memory is None else parse_quantity(memory)


def unit_memory_shrinks(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A sharing change gives each GPU unit less memory (e.g. time-slicing -> MPS): running pods may not fit."""
    risks = []
    for name in sorted(set(before.pools) & set(after.pools)):
        old, new = _unit_memory(before, name), _unit_memory(after, name)
        if old is None or new is None or new >= old:
            continue
        running = before.workloads_on(name)
        needs = {w: _memory_need(before, w) for w in running}
        too_big = sorted_names(w for w, need in needs.items() if need is not None and need > new * GIB)
        details = tuple(
            f"{w}: needs {format_gib(need)} per unit, more than {format_gib(new * GIB)}"
            if w in too_big and need is not None
            else f"{w}: {'no memory need stated' if need is None else f'needs {format_gib(need)} per unit'}; "
            f"could use up to {format_gib(old * GIB)}"
            for w, need in needs.items()
        )
        old_pool, new_pool = before.pools[name], after.pools[name]
        risks.append(
            Risk(
                "unit-memory-shrinks",
                Level.MEDIUM,
                f"Pool '{name}' GPU memory per unit drops from {format_gib(old * GIB)} to {format_gib(new * GIB)} "
                f"(sharing: {naming_text(old_pool)} -> {naming_text(new_pool)})",
                f"Each unit of pool '{name}' could use {format_gib(old * GIB)} of GPU memory; after the change a pod "
                f"gets {format_gib(new * GIB)}. Running pods keep what they have until they restart; a restarted or "
                "new pod that allocates more than its unit's memory fails with CUDA out-of-memory errors."
                + (
                    f" Needing more than {format_gib(new * GIB)} per unit: {quoted(too_big)}."
                    if too_big
                    else (
                        f" Running there: {quoted(running)}."
                        if running
                        else " No workload of the blueprint runs there."
                    )
                ),
                "Check the workloads' peak GPU memory against the new per-unit memory before applying; move the "
                "ones that need more to another pool, or use fewer replicas per GPU.",
                nodes=sorted_names(n for n in new_pool.nodes if n in old_pool.nodes),
                workloads=tuple(running),
                pools=(name,),
                details=details,
            )
        )
    return risks


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.lstrip("v").split("."):
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def device_plugin_chart(before: Snapshot, after: Snapshot) -> list[Risk]:
    """The NVIDIA device plugin chart changes version or source: its DaemonSet rolls on every GPU node."""
    if before.blueprint is None or after.blueprint is None:
        return []
    if before.blueprint.stack is not Stack.DEVICE_PLUGIN or after.blueprint.stack is not Stack.DEVICE_PLUGIN:
        return []  # the standalone chart is installed only with stack: device-plugin (gpu_stack covers a switch)
    old, new = before.blueprint.device_plugin, after.blueprint.device_plugin
    if (old.chart_version, old.repository) == (new.chart_version, new.repository):
        return []
    changes = []
    if old.chart_version != new.chart_version:
        direction = "downgraded" if _version(new.chart_version) < _version(old.chart_version) else "upgraded"
        changes.append(f"{direction} from {old.chart_version} to {new.chart_version}")
    if old.repository != new.repository:
        changes.append(f"pulled from {new.repository} instead of {old.repository}")
    nodes = tuple(sorted(after.node_pools))
    return [
        Risk(
            "device-plugin-chart",
            Level.MEDIUM,
            f"NVIDIA device plugin chart {' and '.join(changes)}",
            f"helm upgrade rolls the device plugin (and GPU Feature Discovery) on every GPU node "
            f"({plural(len(nodes), 'node')}). Running pods keep their GPUs; while a node's plugin restarts, pods "
            "asking for GPUs there wait. Defaults and behaviour can change between chart versions.",
            "Read the chart's changelog between the two versions and roll it out in a quiet window.",
            nodes=nodes,
        )
    ]


def gpu_stack(before: Snapshot, after: Snapshot) -> list[Risk]:
    """spec.stack switches, or the GPU Operator chart changes: what runs the GPUs on every node changes."""
    if before.blueprint is None or after.blueprint is None:
        return []
    old, new = before.blueprint, after.blueprint
    nodes = tuple(sorted(after.node_pools))
    if old.stack is not new.stack:
        chart = old.device_plugin if old.stack is Stack.DEVICE_PLUGIN else old.gpu_operator
        leaving, namespace = chart.release_name, chart.namespace
        return [
            Risk(
                "gpu-stack",
                Level.HIGH,
                f"GPU stack switches from {old.stack} to {new.stack}",
                f"The new output installs the {new.stack} stack but does not remove the {leaving} release: until it "
                f"is uninstalled, two device plugins advertise the GPUs of {plural(len(nodes), 'node')}, and "
                "allocations can hand one GPU to two pods. The GPU Operator also installs a driver and container "
                "toolkit unless spec.gpuOperator says the nodes have them.",
                f"Drain GPU workloads, `helm uninstall {leaving} -n {namespace}`, apply the new output, then run "
                "verify-nodes.sh.",
                nodes=nodes,
            )
        ]
    if new.stack is not Stack.GPU_OPERATOR:
        return []
    was, now = old.gpu_operator, new.gpu_operator
    if (was.chart_version, was.driver, was.toolkit) == (now.chart_version, now.driver, now.toolkit):
        return []
    return [
        Risk(
            "gpu-operator-chart",
            Level.MEDIUM,
            f"GPU Operator {was.chart_version} -> {now.chart_version}"
            + (
                ", driver or toolkit installation changes"
                if (was.driver, was.toolkit) != (now.driver, now.toolkit)
                else ""
            ),
            f"helm upgrade rolls the operator's DaemonSets on every GPU node ({plural(len(nodes), 'node')}); a driver "
            "change restarts the driver container, which evicts the node's GPU pods.",
            "Read the operator's release notes and roll it out in a quiet window, a node pool at a time.",
            nodes=nodes,
        )
    ]

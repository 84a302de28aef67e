"""How `gpustack simulate` grows with the cluster: 1,000 pods on 1,000 nodes (1x) up to 10,000 on 10,000 (10x).

A benchmark, not a test: it prints times and their ratios to the 1x run of the same process, so the
figures compare across machines. Run it with `python bench/bench_simulate.py` (or `--quick` for 1x/2x).

The blueprint mixes what real clusters have: whole-GPU pools, MIG pools, time-sliced and MPS pools,
tenants with quotas, a Volcano tenant with gang-scheduled jobs, and some pools asked for more than
they hold, so the failure path (histograms, preemption dry run, hints) is timed too.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpustack.compile import compile_blueprint
from gpustack.simulate import run_simulation
from gpustack.simulate.report import report_data
from gpustack.validation import validate_text

T = TypeVar("T")

POOLS = (  # name, model, gpus per node, sharing block, pods per 100 nodes, request, kind
    ("h100-a", "H100-SXM5-80GB", 8, "", 150, "{count: 4}", "Deployment"),
    ("h100-b", "H100-SXM5-80GB", 8, "", 220, "{count: 4}", "Deployment"),  # asks for 110%: pending pods
    ("h100-c", "H100-SXM5-80GB", 8, "", 50, "{count: 8}", "VolcanoJob"),
    ("h100-d", "H100-SXM5-80GB", 8, "", 120, "{count: 8}", "VolcanoJob"),  # a gang that fits only partly
    (
        "a100-mig-a",
        "A100-SXM4-80GB",
        8,
        "{strategy: mig, mig: {strategy: mixed, layout: {3g.40gb: 2}}}",
        100,
        "{profile: 3g.40gb}",
        "Deployment",
    ),
    (
        "a100-mig-b",
        "A100-SXM4-80GB",
        8,
        "{strategy: mig, mig: {strategy: mixed, layout: {3g.40gb: 2}}}",
        100,
        "{profile: 3g.40gb}",
        "Deployment",
    ),
    ("l4-ts-a", "L4", 4, "{strategy: time-slicing, timeSlicing: {replicas: 4}}", 60, "{count: 1}", "Deployment"),
    ("l4-ts-b", "L4", 4, "{strategy: time-slicing, timeSlicing: {replicas: 4}}", 60, "{count: 1}", "StatefulSet"),
    ("l40s-mps-a", "L40S", 4, "{strategy: mps, mps: {replicas: 4}}", 70, "{count: 1}", "Deployment"),
    ("l40s-mps-b", "L40S", 4, "{strategy: mps, mps: {replicas: 4}}", 70, "{count: 1}", "Deployment"),
)  # pods per 100 nodes sum to 1,000: at every scale, as many pods as nodes


def blueprint_text(scale: int) -> str:
    nodes_per_pool = 100 * scale
    lines = [
        "apiVersion: gpustack.io/v1alpha1",
        "kind: ClusterBlueprint",
        f"metadata: {{name: bench-{scale}x}}",
        "spec:",
        '  kubernetes: {version: "1.34"}',
        "  nodePools:",
    ]
    for name, model, gpus, sharing, _, _, _ in POOLS:
        nodes = ", ".join(f"{name}-{i:05d}" for i in range(nodes_per_pool))
        lines += [
            f"    - name: {name}",
            f"      gpu: {{model: {model}, count: {gpus}}}",
            f"      nodes: [{nodes}]",
            "      nodeResources: {cpu: '96', memory: 1Ti}",
            f"      taints: [{{key: gpustack.io/pool, value: {name}, effect: NoSchedule}}]",
        ]
        if sharing:
            lines.append(f"      sharing: {sharing}")
    lines.append("  tenants:")
    for name, _, _, _, _, _, kind in POOLS:
        scheduler = "volcano" if kind == "VolcanoJob" else "default"
        lines.append(f"    - {{name: t-{name}, namespaces: [t-{name}], pools: [{name}], scheduler: {scheduler}}}")
    lines.append("  workloads:")
    for name, _, _, _, pods, request, kind in POOLS:
        count = pods * scale
        size = f"workers: {count}" if kind == "VolcanoJob" else f"replicas: {count}"
        lines.append(
            f"    - {{name: w-{name}, tenant: t-{name}, pool: {name}, kind: {kind}, {size}, "
            f"image: bench/{name}:1, gpu: {request}, resources: {{cpu: '4', memory: 32Gi}}}}"
        )
    return "\n".join(lines) + "\n"


REPEAT = 5  # each step runs this many times and the fastest counts: the usual guard against a noisy machine


def timed(action: Callable[[], T], collector: bool = True) -> tuple[T, float]:
    """Best of REPEAT runs; collector=False pauses CPython's cyclic GC, whose full passes grow with the heap."""
    best = float("inf")
    for _ in range(REPEAT):
        gc.collect()  # start each run without the previous run's garbage
        if not collector:
            gc.disable()
        try:
            start = time.perf_counter()
            result = action()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return result, best


def measure(scale: int) -> dict[str, float]:
    text = blueprint_text(scale)
    validation, validate_s = timed(lambda: validate_text(text, f"bench-{scale}x.yaml"))
    assert validation.ok and validation.blueprint is not None, validation.diagnostics[:3]
    blueprint = validation.blueprint
    plan, compile_s = timed(lambda: compile_blueprint(blueprint))
    objects = [m.obj for m in plan.objects]
    simulation, simulate_s = timed(lambda: run_simulation(blueprint, objects))
    _, no_gc_s = timed(lambda: run_simulation(blueprint, objects), collector=False)
    _, report_s = timed(lambda: report_data(simulation, "bench.yaml"))
    outcome = simulation.outcome
    return {
        "nodes": len(outcome.cluster.nodes),
        "pods": len(outcome.placed) + len(outcome.pending),
        "pending": len(outcome.pending),
        "validate": validate_s,
        "compile": compile_s,
        "simulate": simulate_s,
        "no_gc": no_gc_s,
        "report": report_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1x and 2x only")
    scales = (1, 2) if parser.parse_args().quick else (1, 2, 5, 10)
    rows = [(scale, measure(scale)) for scale in scales]
    base = rows[0][1]
    print(
        f"{'scale':>5} {'nodes':>6} {'pods':>6} {'pending':>7} | {'simulate s':>10} {'ratio':>6} | "
        f"{'no-GC s':>8} {'ratio':>6} | {'+report s':>9} {'ratio':>6} | {'validate s':>10} {'compile s':>9}"
    )
    for scale, row in rows:
        print(
            f"{scale:>4}x {row['nodes']:>6} {row['pods']:>6} {row['pending']:>7} | "
            f"{row['simulate']:>10.3f} {row['simulate'] / base['simulate']:>6.2f} | "
            f"{row['no_gc']:>8.3f} {row['no_gc'] / base['no_gc']:>6.2f} | "
            f"{row['report']:>9.3f} {row['report'] / base['report']:>6.2f} | "
            f"{row['validate']:>10.3f} {row['compile']:>9.3f}"
        )
    print(f"ratio: time at that scale / time at 1x in this run (best of {REPEAT}); linear growth reads 10.00 at 10x")


if __name__ == "__main__":
    main()

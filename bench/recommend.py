"""`gpustack recommend` on generated demand mixes: time to the answer, gap to the lower bound, saving over FFD.

Run: python bench/recommend.py [--seeds N] [--quick]

Each mix draws workloads from: inference at 5, 10, 20 and 40 GiB (gpu.memory: the smallest MIG slice that holds
it), fine-tuning on 3 and 4 compute slices (gpu.profile 3g.40gb, 4g.40gb) and whole-GPU jobs (gpu.count 1 or 2),
on A100-SXM4-80GB or H100-80GB nodes of 8 GPUs, with a layout: auto pool. Per mix it prints the GPUs chosen, the
proven lower bound, the gap, whether the answer is proven optimal, first-fit-decreasing's GPUs (the same identical
nodes, each node's share of instances placed largest first into the first GPU whose layout stays valid) and the
seconds `recommend(context)` took (validation not counted).

Targets (issue 29): pools up to 64 GPUs solved to a proven optimum in under 2 s; pools of 1,000 GPUs with hundreds
of workloads within 1 % of the lower bound in under 10 s.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpustack.recommend import recommend
from gpustack.validation import validate_text

MODELS = ("A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3")
KINDS = (
    ("infer-5", "{memory: 5Gi}", "Deployment"),
    ("infer-10", "{memory: 10Gi}", "Deployment"),
    ("infer-20", "{memory: 20Gi}", "Deployment"),
    ("infer-40", "{memory: 40Gi}", "Deployment"),
    ("tune-3g", "{profile: 3g.40gb}", "Job"),
    ("tune-4g", "{profile: 4g.40gb}", "Job"),
    ("whole-1", "{count: 1}", "Job"),
    ("whole-2", "{count: 2}", "Job"),
)


def mix(seed: int, gpus: int, workloads: int, model: str) -> str:
    """A blueprint of `workloads` workloads whose demand wants roughly `gpus` GPUs, one auto pool of 8-GPU nodes."""
    rng = random.Random(seed)
    # Weights: mostly inference, some fine-tuning, a few whole-GPU jobs; replicas scaled to the wanted size.
    weights = (4, 4, 3, 2, 2, 1, 1, 1)
    per_gpu = {"infer-5": 7, "infer-10": 7, "infer-20": 3.5, "infer-40": 2, "tune-3g": 2, "tune-4g": 1}
    budget = gpus * 0.7
    drawn = [rng.choices(KINDS, weights)[0] for _ in range(workloads)]
    share = budget / workloads
    lines = []
    for index, (kind, gpu, object_kind) in enumerate(drawn):
        units = per_gpu.get(kind, 1.0 if kind == "whole-1" else 0.5)
        replicas = max(1, round(share * units * rng.uniform(0.5, 1.5)))
        lines.append(
            f"    - {{name: w{index}-{kind}, tenant: t, pool: p, kind: {object_kind}, replicas: {replicas}, "
            f"image: i/{kind}:1, gpu: {gpu}}}\n"
        )
    nodes = -(-gpus // 8)
    return (
        "apiVersion: gpustack.io/v1alpha1\nkind: ClusterBlueprint\nmetadata: {name: bench}\nspec:\n"
        '  kubernetes: {version: "1.33"}\n  stack: gpu-operator\n  gpuOperator: {chartVersion: v26.7.0}\n'
        f"  nodePools:\n    - name: p\n      gpu: {{model: {model}, count: 8}}\n"
        "      selector: {matchLabels: {pool: p}}\n"
        f"      minNodes: 0\n      maxNodes: {nodes * 2}\n"
        "      sharing: {strategy: mig, mig: {strategy: mixed, layout: auto}}\n"
        "  tenants:\n    - {name: t, namespaces: [t], pools: [p]}\n"
        "  workloads:\n" + "".join(lines)
    )


def measure(seed: int, gpus: int, workloads: int, model: str) -> dict[str, object]:
    result = validate_text(mix(seed, gpus, workloads, model), f"mix-{seed}.yaml")
    assert result.context is not None, [d.message for d in result.diagnostics]
    errors = [d.message for d in result.diagnostics if d.severity.value == "error"]
    assert not errors, errors
    start = time.perf_counter()
    found, refused = recommend(result.context)
    seconds = time.perf_counter() - start
    assert not refused, [d.message for d in refused]
    (r,) = found
    gap = (r.gpus - r.bound_gpus) / r.bound_gpus
    baseline = r.baseline_gpus
    return {
        "seed": seed,
        "model": model,
        "workloads": workloads,
        "gpus": r.gpus,
        "bound": r.bound_gpus,
        "gap": gap,
        "optimal": r.optimal,
        "ffd": baseline,
        "saving": None if baseline is None else (baseline - r.gpus) / baseline,
        "seconds": seconds,
    }


def report(title: str, rows: list[dict[str, object]], goal_seconds: float, goal_gap: float | None) -> bool:
    print(f"\n{title}")
    print(
        f"  {'seed':>4} {'model':<22} {'wl':>4} {'GPUs':>5} {'bound':>5} {'gap':>6} {'opt':>4} {'FFD':>5} "
        f"{'saving':>7} {'s':>6}"
    )
    ok = True
    for row in rows:
        saving = "-" if row["saving"] is None else f"{row['saving']:.1%}"
        ffd = "-" if row["ffd"] is None else str(row["ffd"])
        print(
            f"  {row['seed']:>4} {row['model']:<22} {row['workloads']:>4} {row['gpus']:>5} {row['bound']:>5} "
            f"{row['gap']:>6.1%} {'yes' if row['optimal'] else 'no':>4} {ffd:>5} {saving:>7} {row['seconds']:>6.2f}"
        )
        seconds = float(row["seconds"])  # type: ignore[arg-type]
        gap = float(row["gap"])  # type: ignore[arg-type]
        if seconds > goal_seconds or (goal_gap is None and not row["optimal"]) or (goal_gap and gap > goal_gap):
            ok = False
    savings = [float(r["saving"]) for r in rows if r["saving"] is not None]  # type: ignore[arg-type]
    worst = max(float(r["seconds"]) for r in rows)  # type: ignore[arg-type]
    mean = sum(savings) / len(savings) if savings else 0.0
    print(f"  slowest {worst:.2f} s (goal {goal_seconds:g} s); mean saving over FFD {mean:.1%}; goal met: {ok}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=6, help="mixes per size (default 6)")
    parser.add_argument("--quick", action="store_true", help="two mixes per size, a 1,000-GPU pool of 200 workloads")
    options = parser.parse_args()
    seeds = 2 if options.quick else options.seeds
    small = [
        measure(seed, gpus, workloads, MODELS[seed % 2])
        for seed in range(seeds)
        for gpus, workloads in ((16, 8), (64, 24))
    ]
    large = [measure(100 + seed, 1200, 200 if options.quick else 300, MODELS[seed % 2]) for seed in range(seeds)]
    ok = report("pools up to 64 GPUs: proven optimum, goal < 2 s", small, 2.0, None)
    ok = report("1,000-GPU pools: within 1 % of the lower bound, goal < 10 s", large, 10.0, 0.01) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

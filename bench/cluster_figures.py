"""bench/run.py's cluster stage: `gpustack import SNAP -f BP`, `gpustack drift BP SNAP` and `gpustack simulate BP
--cluster SNAP` run whole in this process on bench/cluster.py's snapshot (BP: the import of SNAP) at 1x and 10x,
against libyaml's C loader parsing SNAP with the cyclic collector off; each command's CPU seconds and tracemalloc's
peak at 10x."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from cluster import NODES_PER_POOL, POOLS_PER_SCALE, cluster_snapshot
from timing import Measured, Target, by_scale, parse_floor, run_command


def snapshot_floor(path: str) -> None:
    """libyaml's C loader parsing the snapshot, the cyclic collector off: what reading it costs in C alone."""
    parse_floor(path)


def cluster_actions(scale: int, folder: Path) -> dict[str, Callable[[], object]]:
    """The cluster stage at one scale: the snapshot, the blueprint its import gives, and each command on them."""
    snapshot = folder / f"cluster-{scale}x.yaml"
    snapshot.write_text(cluster_snapshot(scale), encoding="utf-8")
    blueprint, imported = folder / f"cluster-{scale}x-blueprint.yaml", folder / f"cluster-{scale}x-imported.yaml"
    run_command("import", str(snapshot), "--out-file", str(blueprint))
    return {
        "floor": lambda: snapshot_floor(str(snapshot)),
        "import": lambda: run_command("import", str(snapshot), "--out-file", str(imported)),
        "drift": lambda: run_command("drift", str(blueprint), str(snapshot), exits=(0, 1)),
        "simulate --cluster": lambda: run_command("simulate", str(blueprint), "--cluster", str(snapshot), exits=(0, 1)),
    }


CLUSTER_STAGES = ("import", "drift", "simulate --cluster")


def measure_cluster(folder: Path, repeat: int) -> Measured:
    """The cluster stage's figures at 1x and 10x, interleaved as measure_shape's are."""
    return by_scale(repeat, cluster_actions(1, folder), cluster_actions(10, folder))


def cluster_limits(folder: Path) -> dict[str, tuple[float, int]]:
    """Each cluster command at 10x: its CPU seconds (the fewer of two runs; on a shared machine the wall clock
    counts other processes' time too) and tracemalloc's peak, in a run of its own."""
    actions = cluster_actions(10, folder)
    found = {}
    for stage in ("floor", *CLUSTER_STAGES):
        seconds = []
        for _ in range(2):
            gc.collect()
            start = time.process_time()
            actions[stage]()
            seconds.append(time.process_time() - start)
        gc.collect()
        tracemalloc.start()
        try:
            actions[stage]()
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        found[stage] = (min(seconds), peak)
    return found


def report_cluster(folder: Path, repeat: int) -> list[Target]:
    sizes = {scale: (folder / f"cluster-{scale}x.yaml") for scale in (1, 10)}
    measured = measure_cluster(folder, repeat)
    rows = measured.rows
    described = ", ".join(
        f"{scale}x {path.stat().st_size / 2**20:.2f} MiB ({POOLS_PER_SCALE * scale * NODES_PER_POOL:,} nodes and "
        f"pods, {POOLS_PER_SCALE * scale:,} pools)"
        for scale, path in sizes.items()
    )
    print(f"cluster snapshots: {described}")
    print(
        f"{'cluster':<11} {'scale':>5} | {'floor':>6} | " + " | ".join(f"{s:>18} {'ratio':>6}" for s in CLUSTER_STAGES)
    )
    for scale, row in rows.items():
        figures = " | ".join(f"{row[s]:>18.3f} {measured.ratio(s, 'floor', scale):>5.1f}x" for s in CLUSTER_STAGES)
        print(f"{'cluster':<11} {scale:>4}x | {row['floor']:>6.3f} | {figures}")
    growth = {stage: measured.growth(stage) for stage in ("floor", *CLUSTER_STAGES)}
    print("cluster     growth 1x->10x: " + ", ".join(f"{stage} {value:.1f}x" for stage, value in growth.items()))
    limits = cluster_limits(folder)
    print(
        "cluster     10x CPU seconds and peak traced: "
        + ", ".join(f"{stage} {cpu:.2f} s {peak / 2**20:.0f} MiB" for stage, (cpu, peak) in limits.items())
        + " (goal: each command under 10 s and 1 GiB)"
    )
    floors = f"snapshot parse floor {rows[10]['floor']:.3f} s at 10x, grows {growth['floor']:.1f}x"
    return [
        target
        for stage in CLUSTER_STAGES
        for target in (
            Target(
                f"cluster 10x {stage} (CPU s)",
                10,
                limits[stage][0],
                " s",
                f"{measured.ratio(stage, 'floor'):.1f}x the {floors}",
            ),
            Target(f"cluster 10x {stage} peak (GiB)", 1, limits[stage][1] / 2**30, "G", "tracemalloc"),
            Target(f"cluster growth 1x->10x {stage}", 11, growth[stage], "x", floors),
        )
    ]

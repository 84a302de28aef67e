"""bench/run.py's Kubernetes-limit stage (bench/kubelimit.py: 5,000 nodes, 150,000 pods, 500 tenants at 10x).

`gpustack simulate BP --cluster SNAP` run whole in this process, once with the snapshot as YAML (`kubectl get ... -o
yaml`) and once as JSON (`-o json`, compact: kubectl's own indented JSON of this cluster is 17 MB, over the 8 MiB
every gpustack input may hold), each beside its floor: libyaml's C loader parsing BP and SNAP, or parsing BP and
`json.loads` reading SNAP, the collector off either way. Also simulate's work after reading (place every pod, the
text report), the growth 1x -> 10x of each, the peak memory of each whole command, and the JSON report's size over
the text's.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import yaml
from kubelimit import kube_limit, kube_nodes, kube_pods
from timing import Target, by_scale, collector_off, parse_floor, run_command, simulate, valid

from gpustack.cli import main as cli_main
from gpustack.cluster.snapshot import read_snapshot
from gpustack.compile import compile_blueprint

STAGES = ("floor", "simulate", "floor json", "simulate json", "work")


@collector_off
def json_floor(blueprint: str, snapshot: str) -> None:
    """libyaml's C loader parsing BP and the C json module reading SNAP, collector off."""
    with open(blueprint, encoding="utf-8") as stream:
        yaml.load(stream.read(), Loader=yaml.CSafeLoader)
    with open(snapshot, encoding="utf-8") as stream:
        json.loads(stream.read())


def paths(folder: Path, scale: int) -> tuple[Path, Path, Path]:
    """The blueprint and the snapshot as YAML and as JSON."""
    stem = folder / f"kube-limit-{scale}x"
    return stem.with_suffix(".yaml"), Path(f"{stem}-cluster.yaml"), Path(f"{stem}-cluster.json")


def kube_limit_actions(scale: int, folder: Path) -> dict[str, Callable[[], object]]:
    """`gpustack simulate BP --cluster SNAP` whole on the Kubernetes-limit shape (SNAP as YAML and as JSON), each
    with its floor, and simulate's work after reading."""
    blueprint, snapshot, as_json = paths(folder, scale)
    text, cluster = kube_limit(scale)
    blueprint.write_text(text, encoding="utf-8")
    snapshot.write_text(cluster, encoding="utf-8")
    # The same objects as JSON, compact, as `kubectl get ... -o json | jq -c .` writes them.
    as_json.write_text(json.dumps(yaml.load(cluster, Loader=yaml.CSafeLoader), separators=(",", ":")), "utf-8")
    validation = valid(str(blueprint))
    assert validation.context is not None
    objects = [m.obj for m in compile_blueprint(validation.context).objects]
    loaded = read_snapshot(str(snapshot))
    command = ("simulate", str(blueprint), "--cluster")
    return {
        "floor": lambda: parse_floor(str(blueprint), str(snapshot)),
        "simulate": lambda: run_command(*command, str(snapshot), exits=(0, 1)),
        "floor json": lambda: json_floor(str(blueprint), str(as_json)),
        "simulate json": lambda: run_command(*command, str(as_json), exits=(0, 1)),
        "work": lambda: simulate(validation, objects, loaded),
    }


def output_sizes(folder: Path, scale: int) -> dict[str, int]:
    """Bytes of `simulate --cluster` at `scale` as text and as --output json (both written once, here)."""
    blueprint, snapshot, _ = paths(folder, scale)
    sizes = {}
    for output in ("text", "json"):
        written = folder / f"kube-limit-{scale}x.{output}"
        with (
            open(written, "w", encoding="utf-8") as sink,
            contextlib.redirect_stdout(sink),
            open(os.devnull, "w", encoding="utf-8") as errors,
            contextlib.redirect_stderr(errors),
        ):
            try:
                cli_main(["simulate", str(blueprint), "--cluster", str(snapshot), "--output", output])
            except SystemExit as done:
                assert done.code in (0, 1, None), f"simulate exited {done.code}"
        sizes[output] = written.stat().st_size
    return sizes


def peak(action: Callable[[], object]) -> int:
    """tracemalloc's peak while the action runs."""
    gc.collect()
    tracemalloc.start()
    try:
        action()
    finally:
        _, found = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return found


def report_kube_limit(folder: Path, repeat: int) -> list[Target]:
    """The Kubernetes-limit shape simulated in one command at 1x and 10x, interleaved, its snapshot as YAML and as
    JSON; simulate's work after reading (as the shapes' simulate figure); peaks; the JSON report's size over the
    text's."""
    one, ten = kube_limit_actions(1, folder), kube_limit_actions(10, folder)
    measured = by_scale(repeat, {stage: one[stage] for stage in STAGES}, {stage: ten[stage] for stage in STAGES})
    rows = measured.rows
    peaks = {stage: peak(ten[stage]) for stage in ("simulate", "simulate json")}
    sizes = output_sizes(folder, 10)
    for scale in (1, 10):
        t = rows[scale]
        _, snapshot, as_json = paths(folder, scale)
        print(
            f"kube-limit {scale:>4}x | {kube_pods(scale):,} pods on {kube_nodes(scale):,} nodes, {50 * scale} "
            f"tenants | work after reading {t['work']:.3f} s\n"
            f"{'':>17}| whole, YAML snapshot ({snapshot.stat().st_size / 2**20:.1f} MiB): {t['simulate']:.3f} s, "
            f"floor {t['floor']:.3f} s: {measured.ratio('simulate', 'floor', scale):.2f}x\n"
            f"{'':>17}| whole, JSON snapshot ({as_json.stat().st_size / 2**20:.1f} MiB): {t['simulate json']:.3f} s, "
            f"floor {t['floor json']:.3f} s: {measured.ratio('simulate json', 'floor json', scale):.2f}x"
        )
    growth = {stage: measured.growth(stage) for stage in STAGES}
    print(
        "kube-limit growth 1x->10x (pods 10x): "
        + ", ".join(f"{stage} {value:.1f}x" for stage, value in growth.items())
        + f"; 10x peak traced: whole YAML {peaks['simulate'] / 2**20:.0f} MiB, whole JSON "
        f"{peaks['simulate json'] / 2**20:.0f} MiB; report text {sizes['text'] / 1e6:.1f} MB, "
        f"json {sizes['json'] / 1e6:.1f} MB ({sizes['json'] / sizes['text']:.1f}x)"
    )

    def over(stage: str, floor: str) -> str:
        return f"{measured.ratio(stage, floor):.2f}x its floor of {rows[10][floor]:.3f} s"

    def grew(stage: str, floor: str) -> Target:
        return Target(f"kube-limit growth 1x->10x {stage}", 11, growth[stage], "x", f"{floor} {growth[floor]:.1f}x")

    return [
        Target("kube-limit 10x simulate's work (s)", 3, rows[10]["work"], " s", over("work", "floor json")),
        Target(
            "kube-limit 10x simulate, whole, JSON snapshot (s)",
            3,
            rows[10]["simulate json"],
            " s",
            over("simulate json", "floor json"),
        ),
        Target(
            "kube-limit 10x simulate, whole, YAML snapshot (s)",
            3,
            rows[10]["simulate"],
            " s",
            over("simulate", "floor"),
        ),
        grew("work", "floor json"),
        grew("simulate json", "floor json"),
        grew("simulate", "floor"),
        Target(
            "kube-limit 10x json / text report",
            4,
            sizes["json"] / sizes["text"],
            "x",
            f"text {sizes['text'] / 1e6:.1f} MB, peak traced {peaks['simulate'] / 2**20:.0f} MiB",
        ),
    ]

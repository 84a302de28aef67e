"""gpustack against floors that are not gpustack's code, measured side by side in one run.

Run: python bench/run.py [--repeat N] [--quick] [--cluster] [--kube-limit] [--profile STAGE]

Each figure is the median of N repeats (in each, ten runs at 1x, whose figures are ten times smaller); a stage
and its floor run alternately, and so do a stage's 10x and 1x runs, so a neighbour's load slows both sides of every
ratio, and each ratio is the median of the N taken repeat by repeat (timing.Measured). Read the ratios, not the
seconds: seconds move with the machine, ratios much less. The run ends with a host probe taken at its start and end.

  compile    `gpustack compile BP -o -`'s work (read, validate, compile, render the stream), against
             libyaml doing the same reading and writing: `yaml.CSafeLoader` parses BP and
             `yaml.CSafeDumper` dumps the same objects (goal <= 1.5x at 10x)
  validate   `gpustack validate BP`'s work, against `yaml.CSafeLoader` parsing BP (goal <= 1.2x at 10x)
  simulate   `gpustack simulate BP`'s work after compile: place every pod, the report (goal <= 3 s at 10x);
             --profile simulate profiles the whole command (read, validate, compile too)
  diff       `gpustack diff BP BP'` (one pool grows by a node), against compile (goal <= 2x at 10x)
  capacity   `gpustack capacity BP`, against compile (goal <= 2x at 10x)
  rollout    `gpustack rollout BP BP' -o script`, BP' retainting every pool (every node drained, one wave per
             pool's 10 %), against compile of both sides (goal <= 2x at 10x)
  growth     the same stage at 10x over 1x (goal <= 11x; 10x is linear), floors too: CPython itself
             grows faster than linearly on this machine (the cyclic GC's full passes grow with the heap), and
             so does linear work in C ("linear floor": libyaml parsing BP and writing it back, collector off)
  cluster    the live-cluster commands on a cluster snapshot (bench/cluster.py: 10x is 7.7 MiB, 13,000 nodes and
             their pods, 1,000 pools): `gpustack import SNAP -f BP`, `gpustack drift BP SNAP` and `gpustack simulate
             BP --cluster SNAP` (BP: the import of SNAP), each run whole in this process, against libyaml's C loader
             parsing SNAP with the cyclic collector off; goal at 10x: each command under 10 s and 1 GiB (tracemalloc's
             peak), and growth 1x->10x linear. --cluster runs only this stage
  kube-limit the Kubernetes-limit shape (bench/kubelimit.py, bench/limit_figures.py: 5,000 nodes, 150,000 pods,
             500 tenants at 10x): `gpustack simulate BP --cluster SNAP` whole with SNAP as YAML and as JSON, each
             against its floor (libyaml parsing BP, and libyaml or json.loads reading SNAP), and simulate's work
             after reading; goal at 10x: <= 3 s (the work, and the command with a JSON snapshot), growth linear.
             --kube-limit runs only this stage
  --help     `gpustack --help` in a fresh interpreter, against `python -c "import yaml, click"` (goal <= 1.1x)
  memory     tracemalloc's peak while `gpustack compile BP -d -` runs (10x, output to /dev/null), over the stream's
             size (goal <= 4x)

Shapes (bench/fleet.py): many-pools (1x: 100 pools, 1,000 nodes, 50 tenants, 50 workloads; 10x: 1,000 /
10,000 / 500 / 500, one pod per node; one workload in ten cannot be placed in full), many-pools-fit (the same,
every pod placed) and few-pools (10 pools of 100 nodes per 1x; one pod per node).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import os
import pstats
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import yaml  # noqa: E402
from cluster_figures import CLUSTER_STAGES, cluster_actions, report_cluster  # noqa: E402
from fleet import few_pools, grown, many_pools  # noqa: E402
from limit_figures import kube_limit_actions, report_kube_limit  # noqa: E402
from timing import (  # noqa: E402
    Measured,
    Target,
    by_scale,
    collector_off,
    host_probe,
    medians,
    parse_floor,
    print_targets,
    probe_line,
    simulate,
    valid,
)

from gpustack.capacity import capacity_data, measure_capacity  # noqa: E402
from gpustack.capacity import format_text as capacity_text  # noqa: E402
from gpustack.cli import main as cli_main  # noqa: E402
from gpustack.compile import compile_blueprint  # noqa: E402
from gpustack.outputs import render_stream, streamed  # noqa: E402
from gpustack.review.loading import side_from_file  # noqa: E402
from gpustack.review.report import RENDERERS  # noqa: E402
from gpustack.review.review import review_change  # noqa: E402
from gpustack.rollout.planner import plan_rollout  # noqa: E402
from gpustack.rollout.script import render_script  # noqa: E402
from gpustack.validation import validate_path  # noqa: E402

SHAPES: dict[str, Callable[[int], str]] = {
    "many-pools": many_pools,
    "many-pools-fit": lambda scale: many_pools(scale, oversubscribed=False),
    "few-pools": few_pools,
}


class _FloorDumper(yaml.CSafeDumper):  # type: ignore[misc,name-defined]
    """libyaml's emitter with PyYAML's C-free representers; tuples as lists and no aliases, as gpustack writes."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_FloorDumper.add_representer(tuple, yaml.representer.SafeRepresenter.represent_list)


def compile_stream(path: str) -> str:
    context = valid(path).context
    assert context is not None
    return render_stream(compile_blueprint(context))


@collector_off
def compile_floor(path: str, objects: list[Any]) -> str:
    """libyaml's C loader parsing BP and its C emitter writing the compiled objects, collector off."""
    with open(path, encoding="utf-8") as stream:
        yaml.load(stream.read(), Loader=yaml.CSafeLoader)
    return str(
        yaml.dump_all(
            objects, Dumper=_FloorDumper, default_flow_style=False, sort_keys=False, allow_unicode=True, width=1 << 30
        )
    )


@collector_off
def linear_floor(path: str) -> None:
    """libyaml parsing BP and writing it back with the cyclic collector off: work linear in the blueprint, done in C,
    whose growth from 1x to 10x is this machine's (caches, memory), not an algorithm's."""
    with open(path, encoding="utf-8") as stream:
        yaml.dump(yaml.load(stream.read(), Loader=yaml.CSafeLoader), Dumper=yaml.CSafeDumper)


def simulate_file(path: str) -> str:
    result = valid(path)
    assert result.context is not None
    return simulate(result, [m.obj for m in compile_blueprint(result.context).objects])


def diff(old: str, new: str) -> str:
    before, after = side_from_file(old), side_from_file(new)
    assert before.snapshot is not None and after.snapshot is not None
    return str(RENDERERS["text"](review_change(before.snapshot, after.snapshot)))


def rollout(old: str, new: str) -> str:
    """`gpustack rollout OLD NEW -o script --allow-capacity-drop`'s work: read both sides, plan, write the script."""
    before, after = side_from_file(old), side_from_file(new)
    assert before.snapshot is not None and after.snapshot is not None
    return render_script(plan_rollout(before.snapshot, after.snapshot))


def capacity(path: str) -> str:
    context = valid(path).context
    assert context is not None
    return capacity_text(capacity_data(measure_capacity(context), path))


def shape_actions(shape: str, scale: int, folder: Path, with_reviews: bool) -> dict[str, Callable[[], object]]:
    path = folder / f"{shape}-{scale}x.yaml"
    path.write_text(SHAPES[shape](scale), encoding="utf-8")
    validation = valid(str(path))
    assert validation.context is not None
    plan = compile_blueprint(validation.context)
    objects = [m.obj for m in streamed(plan)]
    everything = [m.obj for m in plan.objects]
    actions: dict[str, Callable[[], object]] = {
        "parse floor": lambda: parse_floor(str(path)),
        "linear floor": lambda: linear_floor(str(path)),
        "validate": lambda: validate_path(str(path)),
        "compile floor": lambda: compile_floor(str(path), objects),
        "compile": lambda: compile_stream(str(path)),
        "simulate": lambda: simulate(validation, everything),
    }
    if with_reviews:
        changed = folder / f"{shape}-{scale}x-grown.yaml"
        changed.write_text(grown(SHAPES[shape](scale)), encoding="utf-8")
        actions["diff"] = lambda: diff(str(path), str(changed))
        actions["capacity"] = lambda: capacity(str(path))
        # A change touching every pool (each taint's effect changes): one wave per pool's 10 %, all nodes drained.
        retainted = folder / f"{shape}-{scale}x-retainted.yaml"
        retainted.write_text(SHAPES[shape](scale).replace("NoSchedule", "NoExecute"), encoding="utf-8")
        actions["rollout"] = lambda: rollout(str(path), str(retainted))
        actions["compile both"] = lambda: (compile_stream(str(path)), compile_stream(str(retainted)))
    return actions


def measure_shape(shape: str, folder: Path, repeat: int) -> Measured:
    """Every figure of the shape at 1x and 10x, each 10x run followed by ten runs of the same stage at 1x: a growth
    figure divides figures taken side by side, and each rests on about as many seconds of work."""
    one = shape_actions(shape, 1, folder, with_reviews=False)
    return by_scale(repeat, one, shape_actions(shape, 10, folder, with_reviews=True))


def help_ratio(repeat: int) -> tuple[float, float]:
    """Seconds for `gpustack --help` and for importing yaml and click, each in a fresh interpreter (wall clock: the
    work is in the child processes)."""
    commands = {
        "help": [sys.executable, "-m", "gpustack", "--help"],
        "floor": [sys.executable, "-c", "import yaml, click"],
    }
    times = medians(
        repeat * 3,
        {
            name: (lambda c=command: subprocess.run(c, check=True, capture_output=True))
            for name, command in commands.items()
        },
        clock=time.perf_counter,
    )
    return times["help"], times["floor"]


def peak_memory(path: Path) -> tuple[int, int]:
    """tracemalloc's peak while `gpustack compile PATH -d -` runs in this process (its output to /dev/null), and the
    stream's size in bytes (UTF-8)."""
    size = len(compile_stream(str(path)).encode("utf-8"))
    gc.collect()
    with (
        open(os.devnull, "w", encoding="utf-8") as sink,
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
    ):
        tracemalloc.start()
        try:
            cli_main(["compile", str(path), "-d", "-"])
        except SystemExit as done:
            assert not done.code, f"compile exited {done.code}"
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    return peak, size


def profile(stage: str, shape: str, scale: int, folder: Path) -> None:
    path = folder / f"{shape}-{scale}x.yaml"
    path.write_text(SHAPES[shape](scale), encoding="utf-8")
    changed = folder / f"{shape}-{scale}x-grown.yaml"
    changed.write_text(grown(path.read_text(encoding="utf-8")), encoding="utf-8")
    retainted = folder / f"{shape}-{scale}x-retainted.yaml"
    retainted.write_text(SHAPES[shape](scale).replace("NoSchedule", "NoExecute"), encoding="utf-8")
    actions: dict[str, Callable[[], object]] = {
        "validate": lambda: validate_path(str(path)),
        "compile": lambda: compile_stream(str(path)),
        "simulate": lambda: simulate_file(str(path)),
        "diff": lambda: diff(str(path), str(changed)),
        "capacity": lambda: capacity(str(path)),
        "rollout": lambda: rollout(str(path), str(retainted)),
    }
    profiler = cProfile.Profile()
    profiler.runcall(actions[stage])
    for order in ("cumulative", "tottime"):
        print(f"--- {stage} {shape} {scale}x, top 25 by {order}")
        pstats.Stats(profiler, stream=sys.stdout).strip_dirs().sort_stats(order).print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=3, help="repeats per figure (ten runs at 1x in each); the median counts"
    )
    parser.add_argument("--quick", action="store_true", help="many-pools shapes only, no --help and memory figures")
    parser.add_argument("--cluster", action="store_true", help="only the cluster stage (import, drift, simulate)")
    parser.add_argument(
        "--kube-limit", action="store_true", help="only the Kubernetes-limit shape (5,000 nodes, 150,000 pods)"
    )
    parser.add_argument(
        "--profile",
        choices=(
            *("validate", "compile", "simulate", "diff", "capacity", "rollout", "kube-limit", "kube-limit-json"),
            *CLUSTER_STAGES,
        ),
        help="print a cProfile summary of one stage (many-pools 10x, or --shape/--scale) instead of the figures",
    )
    parser.add_argument("--shape", choices=tuple(SHAPES), default="many-pools", help="shape for --profile")
    parser.add_argument("--scale", type=int, default=10, help="scale for --profile")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpustack-bench-") as temporary:
        folder = Path(temporary)
        if options.profile in (*CLUSTER_STAGES, "kube-limit", "kube-limit-json"):
            limit = {"kube-limit": "simulate", "kube-limit-json": "simulate json"}.get(options.profile)
            action = (
                kube_limit_actions(options.scale, folder)[limit]
                if limit is not None
                else cluster_actions(options.scale, folder)[options.profile]
            )
            profiler = cProfile.Profile()
            profiler.runcall(action)
            for order in ("cumulative", "tottime"):
                print(f"--- {options.profile} cluster {options.scale}x, top 25 by {order}")
                pstats.Stats(profiler, stream=sys.stdout).strip_dirs().sort_stats(order).print_stats(25)
            return
        if options.profile:
            profile(options.profile, options.shape, options.scale, folder)
            return
        probe = many_pools(10)
        start = host_probe(probe)
        if options.cluster or options.kube_limit:
            print("every floor runs with the cyclic collector off (gc.disable()), as gpustack's own stages do")
            print_targets(
                report_cluster(folder, options.repeat) if options.cluster else report_kube_limit(folder, options.repeat)
            )
        else:
            report(options, folder)
        print(probe_line(probe, start))
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")


def report(options: argparse.Namespace, folder: Path) -> None:
    print(
        f"python {sys.version.split()[0]}, PyYAML {yaml.__version__}, libyaml {yaml.__with_libyaml__}, "
        f"median of {options.repeat} repeats (ten runs at 1x in each; ratios taken repeat by repeat), CPU seconds "
        "of this process "
        f"(time.process_time), {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("every floor runs with the cyclic collector off (gc.disable()), as gpustack's own stages do")
    shapes = ("many-pools", "many-pools-fit") if options.quick else tuple(SHAPES)
    print(
        f"{'shape':<11} {'scale':>5} | {'validate':>8} {'parse':>6} {'ratio':>5} | {'compile':>7} {'floor':>6} "
        f"{'ratio':>5} | {'simulate':>8} /cflr | {'diff':>6} {'/comp':>5} | {'capacity':>8} {'/comp':>5}"
    )
    targets: list[Target] = []
    for shape in shapes:
        measured = measure_shape(shape, folder, options.repeat)
        for scale in (1, 10):
            print(shape_line(shape, scale, measured))
        stages = ("validate", "parse floor", "compile", "compile floor", "simulate", "linear floor")
        growth = {stage: measured.growth(stage) for stage in stages}
        print(f"{shape:<11} growth 1x->10x: " + ", ".join(f"{stage} {value:.1f}x" for stage, value in growth.items()))
        ten = measured.rows[10]
        print(
            f"{shape:<11} rollout of every pool retainted (10x, -o script): {ten['rollout']:.2f} s, compile of "
            f"both sides {ten['compile both']:.2f} s: {measured.ratio('rollout', 'compile both'):.2f}x (goal <= 2x)"
        )
        if shape == "many-pools":
            targets += shape_targets(measured, growth)
    if options.quick:
        print_targets(targets)
        return
    targets += report_cluster(folder, options.repeat)
    targets += report_kube_limit(folder, options.repeat)
    help_s, floor_s = help_ratio(options.repeat)
    print(f"gpustack --help {help_s:.3f} s, python -c 'import yaml, click' {floor_s:.3f} s: {help_s / floor_s:.2f}x")
    path = folder / "many-pools-10x.yaml"
    peak, size = peak_memory(path)
    print(f"compile many-pools 10x: peak {peak / 1e6:.1f} MB traced, stream {size / 1e6:.1f} MB: {peak / size:.2f}x")
    targets.append(Target("--help over importing yaml and click", 1.1, help_s / floor_s, "x", f"{floor_s:.3f} s"))
    targets.append(
        Target("peak memory of compile -d - over its stream (10x)", 3, peak / size, "x", f"stream {size / 1e6:.1f} MB")
    )
    print_targets(targets)


def shape_line(shape: str, scale: int, measured: Measured) -> str:
    """One row of the shapes' table: each stage's median seconds and its ratio (repeat by repeat) at this scale."""
    row = measured.rows[scale]

    def ratio(stage: str, over: str) -> str:
        return f"{measured.ratio(stage, over, scale):>4.2f}x"

    reviews = (
        f"{row['diff']:>6.2f} {ratio('diff', 'compile')} | {row['capacity']:>8.2f} {ratio('capacity', 'compile')}"
        if "diff" in row
        else f"{'':>6} {'':>5} | {'':>8} {'':>5}"
    )
    return (
        f"{shape:<11} {scale:>4}x | {row['validate']:>8.3f} {row['parse floor']:>6.3f} "
        f"{ratio('validate', 'parse floor')} | {row['compile']:>7.3f} {row['compile floor']:>6.3f} "
        f"{ratio('compile', 'compile floor')} | {row['simulate']:>8.3f} "
        f"{ratio('simulate', 'compile floor')} | {reviews}"
    )


def shape_targets(measured: Measured, growth: dict[str, float]) -> list[Target]:
    """Issue 28's goals at many-pools 10x, each with the floor figures its ratio divides by."""
    ten, ratio = measured.rows[10], measured.ratio
    compile_s = f"compile {ten['compile']:.3f} s"
    return [
        Target(
            "many-pools 10x compile / C parse+emit floor",
            1.5,
            ratio("compile", "compile floor"),
            "x",
            f"floor {ten['compile floor']:.3f} s, {compile_s}",
        ),
        Target(
            "many-pools 10x validate / C parse floor",
            1.2,
            ratio("validate", "parse floor"),
            "x",
            f"floor {ten['parse floor']:.3f} s, validate {ten['validate']:.3f} s",
        ),
        Target("many-pools 10x diff / compile", 2, ratio("diff", "compile"), "x", compile_s),
        Target("many-pools 10x capacity / compile", 2, ratio("capacity", "compile"), "x", compile_s),
        Target(
            "many-pools 10x rollout (every pool) / compile both",
            2,
            ratio("rollout", "compile both"),
            "x",
            f"compile both {ten['compile both']:.3f} s, rollout {ten['rollout']:.3f} s",
        ),
        Target(
            "many-pools 10x simulate (s)",
            3,
            ten["simulate"],
            " s",
            f"{ratio('simulate', 'compile floor'):.2f}x the compile floor of {ten['compile floor']:.3f} s",
        ),
        *(
            Target(
                f"many-pools growth 1x->10x {stage}",
                11,
                growth[stage],
                "x",
                f"linear floor {growth['linear floor']:.1f}x, parse floor {growth['parse floor']:.1f}x",
            )
            for stage in ("validate", "compile", "simulate")
        ),
    ]


if __name__ == "__main__":
    main()

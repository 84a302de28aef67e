"""What every stage of bench/run.py times with: CPU seconds, medians of interleaved runs, floors with the collector off,
a command run whole in this process, simulate's work after reading, and a target beside what was measured."""

from __future__ import annotations

import contextlib
import gc
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from gpustack.cli import main as cli_main
from gpustack.cluster.snapshot import ClusterSnapshot
from gpustack.collector import paused
from gpustack.simulate import run_simulation
from gpustack.simulate.report import format_text as simulation_text
from gpustack.simulate.report import report_data
from gpustack.validation import Validation, validate_path


def collector_off(floor: Callable[..., Any]) -> Callable[..., Any]:
    """A floor run with CPython's cyclic collector off, as gpustack's stages run (gpustack/collector.py): the floor is
    the best the same work can cost, and with the collector on libyaml's loader spends most of its 10x parse in
    collections that walk the growing heap."""

    def run(*args: Any) -> Any:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return floor(*args)
        finally:
            if was_enabled:
                gc.enable()

    run.__doc__ = floor.__doc__
    return run


@collector_off
def parse_floor(*paths: str) -> None:
    """libyaml's C loader parsing each file, collector off."""
    for path in paths:
        with open(path, encoding="utf-8") as stream:
            yaml.load(stream.read(), Loader=yaml.CSafeLoader)


def timed(action: Callable[[], object], clock: Callable[[], float] = time.process_time) -> float:
    """CPU seconds the action took in this process. On a shared machine the wall clock counts the neighbours' time
    too (the same floor read 2.5 s to 40 s of wall time within an hour on the 2-core development machine); the
    process's own CPU time does not. --help, which runs a fresh interpreter, is timed by the wall clock."""
    gc.collect()
    start = clock()
    action()
    return clock() - start


def repeats(
    repeat: int,
    actions: dict[str, Callable[[], object]],
    runs: dict[str, int] | None = None,
    clock: Callable[[], float] = time.process_time,
) -> dict[str, list[float]]:
    """Each action `repeat` times (`runs[name]` times as often where given), interleaved, so load from other
    processes falls on all of them alike: name -> its seconds in each repeat (the median of that repeat's runs)."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(repeat):
        for name, action in actions.items():
            runs_now = [timed(action, clock) for _ in range((runs or {}).get(name, 1))]
            times[name].append(statistics.median(runs_now))
    return times


def medians(
    repeat: int,
    actions: dict[str, Callable[[], object]],
    runs: dict[str, int] | None = None,
    clock: Callable[[], float] = time.process_time,
) -> dict[str, float]:
    """The median over `repeats` of each action's seconds."""
    return {name: statistics.median(values) for name, values in repeats(repeat, actions, runs, clock).items()}


@dataclass(frozen=True)
class Measured:
    """Each stage's seconds in each repeat at 1x and 10x (scale -> stage -> one figure per repeat).

    A ratio is the median of the ratios taken repeat by repeat, each between runs made seconds apart, not the ratio
    of two medians that may come from different minutes: on this shared machine a neighbour's load comes and goes
    over minutes, and within one repeat it slows both sides of a ratio alike."""

    times: dict[int, dict[str, list[float]]]

    @property
    def rows(self) -> dict[int, dict[str, float]]:
        """scale -> stage -> median seconds."""
        return {
            scale: {stage: statistics.median(values) for stage, values in stages.items()}
            for scale, stages in self.times.items()
        }

    def ratio(self, stage: str, over: str, scale: int = 10) -> float:
        """`stage` over `over` at one scale, repeat by repeat."""
        mine, theirs = self.times[scale][stage], self.times[scale][over]
        return statistics.median(a / b for a, b in zip(mine, theirs, strict=True))

    def growth(self, stage: str) -> float:
        """`stage` at 10x over the same stage at 1x, repeat by repeat."""
        ten, one = self.times[10][stage], self.times[1][stage]
        return statistics.median(a / b for a, b in zip(ten, one, strict=True))


def by_scale(repeat: int, one: dict[str, Callable[[], object]], ten: dict[str, Callable[[], object]]) -> Measured:
    """Each stage at 10x and at 1x (ten runs at 1x for each at 10x, their median that repeat's 1x figure), each
    stage's 10x run next to its 1x runs. A stage `one` lacks is measured at 10x only."""
    actions = {f"10 {stage}": action for stage, action in ten.items()}
    actions |= {f"1 {stage}": action for stage, action in one.items() if stage in ten}
    actions = dict(sorted(actions.items(), key=lambda item: list(ten).index(item[0].split(" ", 1)[1])))
    times: dict[int, dict[str, list[float]]] = {1: {}, 10: {}}
    for name, values in repeats(repeat, actions, {name: 10 for name in actions if name.startswith("1 ")}).items():
        scale, stage = name.split(" ", 1)
        times[int(scale)][stage] = values
    return Measured(times)


def run_command(*argv: str, exits: tuple[int, ...] = (0,)) -> None:
    """One gpustack command run whole in this process (read, work, report), its output to /dev/null. drift exits 1
    when it finds drift, simulate when a pod stays pending: the stage says which exits are its work done."""
    with (
        open(os.devnull, "w", encoding="utf-8") as sink,
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
    ):
        try:
            cli_main(list(argv))
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0
            assert code in exits, f"gpustack {' '.join(argv)} exited {done.code}"


def valid(path: str) -> Validation:
    result = validate_path(path)
    assert result.ok and result.blueprint is not None, [d.message for d in result.diagnostics[:3]]
    return result


@paused()  # as `gpustack simulate` runs: one pause for the whole command
def simulate(result: Validation, objects: list[Any], snapshot: ClusterSnapshot | None = None) -> str:
    """`gpustack simulate`'s work after compile (and reading the --cluster snapshot): place every pod, the report."""
    assert result.context is not None and result.document is not None
    document = result.document
    simulation = run_simulation(result.context, objects, snapshot=snapshot)
    return simulation_text(report_data(simulation, result.file, lambda _which, path: document.span(path)))


@dataclass(frozen=True)
class Target:
    """One goal of issue 28 beside what this run measured, and the floor figures the ratio divides by."""

    figure: str
    goal: float
    measured: float
    unit: str  # "x" for a ratio, " s" for seconds
    floors: str

    def line(self) -> str:
        met = "met" if self.measured <= self.goal else "MISSED"
        goal = f"{self.goal:g}{self.unit}"
        measured = f"{self.measured:7.2f}{self.unit}"
        return f"  {self.figure:<52} goal <= {goal:<5} measured {measured:<9} {met:<6} | {self.floors}"


def host_probe(text: str) -> float:
    """The best of three parses of `text` by libyaml's C loader, collector off, in CPU seconds: the same work every
    run, none of it gpustack's. Taken at a run's start and end, it says how loud the machine was around the figures:
    on the 2-core development machine a neighbour's load slowed this same parse by up to half, CPU seconds and all."""

    @collector_off
    def parse() -> None:
        yaml.load(text, Loader=yaml.CSafeLoader)

    return min(timed(parse) for _ in range(3))


def probe_line(text: str, start: float) -> str:
    end = host_probe(text)
    moved = abs(end - start) / min(start, end)
    verdict = "steady" if moved <= 0.1 else "moved: a loud machine, read ratios taken side by side only"
    return (
        f"host probe (libyaml parsing many-pools 10x, collector off, best of 3): {start:.3f} s at the start, "
        f"{end:.3f} s at the end ({verdict})"
    )


def print_targets(targets: list[Target]) -> None:
    print("targets (issue 28), measured in this run against floors run with the collector off:")
    for target in targets:
        print(target.line())

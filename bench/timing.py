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


def medians(
    repeat: int,
    actions: dict[str, Callable[[], object]],
    runs: dict[str, int] | None = None,
    clock: Callable[[], float] = time.process_time,
) -> dict[str, float]:
    """Each action `repeat` times (`runs[name]` times as often where given), interleaved, so load from other
    processes falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(repeat):
        for name, action in actions.items():
            for _ in range((runs or {}).get(name, 1)):
                times[name].append(timed(action, clock))
    return {name: statistics.median(values) for name, values in times.items()}


def by_scale(
    repeat: int, one: dict[str, Callable[[], object]], ten: dict[str, Callable[[], object]]
) -> dict[int, dict[str, float]]:
    """Each stage at 10x and at 1x (ten times as many runs at 1x), interleaved: scale -> stage -> median CPU s.
    A stage `one` lacks is measured at 10x only."""
    actions = {f"10 {stage}": action for stage, action in ten.items()}
    actions |= {f"1 {stage}": action for stage, action in one.items() if stage in ten}
    actions = dict(sorted(actions.items(), key=lambda item: list(ten).index(item[0].split(" ", 1)[1])))
    times = medians(repeat, actions, {name: 10 for name in actions if name.startswith("1 ")})
    rows: dict[int, dict[str, float]] = {1: {}, 10: {}}
    for name, seconds in times.items():
        scale, stage = name.split(" ", 1)
        rows[int(scale)][stage] = seconds
    return rows


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


def print_targets(targets: list[Target]) -> None:
    print("targets (issue 28), measured in this run against floors run with the collector off:")
    for target in targets:
        print(target.line())

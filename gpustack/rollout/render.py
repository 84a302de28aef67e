"""A RolloutPlan for people: terminal text and Markdown (a change ticket, a PR comment), and JSON for tools."""

from __future__ import annotations

import re
from collections.abc import Callable

from gpustack.collector import paused
from gpustack.escapes import json_safe
from gpustack.json_text import pretty_json
from gpustack.report import format_text
from gpustack.review.formatting import cell, code, fence, one_line
from gpustack.rollout.data import rollout_data, summary_data
from gpustack.rollout.model import Availability, Phase, RolloutPlan
from gpustack.rollout.script import command_line, render_script, visible

# What could start markup inside a line of markdown prose: emphasis, links and images (`[`), inline HTML, code spans,
# @mentions, entities, table pipes. Plan text carries names from templates and file names, so it is escaped.
_MARKUP = re.compile(r"([\\`*_\[\]<>@#|~&])")


def duration(seconds: int) -> str:
    hours, minutes = divmod(-(-seconds // 60), 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"


def _cell(row: Availability | None) -> str:
    if row is None:
        return "-"
    if not row.guaranteed:
        return str(row.available)
    mark = " !" if row.short else ""
    return f"{row.available}/{row.guaranteed}{mark}"


MAX_WAVE_COLUMNS = 8  # more waves than this: the table shows the lowest figure, each wave states its own


def capacity_rows(plan: RolloutPlan) -> tuple[list[str], list[list[str]]]:
    """Header and rows: available units (over the tenants' guarantee) before, during each wave, and after."""
    columns: list[tuple[str, tuple[Availability, ...]]] = [("before", plan.capacity_before)]
    compact = len(plan.waves) > MAX_WAVE_COLUMNS
    if not compact:
        columns += [(phase.id, phase.capacity) for phase in plan.waves]
    columns.append(("after", plan.capacity_after))
    by_column = [{(row.pool, row.resource): row for row in rows} for _, rows in columns]
    # Each pair's lowest figure over the waves, worked out by the planner: every wave's pairs are there too.
    lowest = {(row.pool, row.resource): (wave, row) for wave, row in plan.lowest}
    table = []
    for key in sorted(set(lowest).union(*by_column)):
        cells = [_cell(rows.get(key)) for rows in by_column]
        if compact:
            wave, row = lowest.get(key, ("", None))
            cells.insert(1, f"{_cell(row)} ({wave})" if row is not None else "-")
        table.append([*key, *cells])
    names = [name for name, _ in columns]
    if compact:
        names.insert(1, "lowest during the waves")
    return ["pool", "resource", *names], table


def wave_capacity(phase: Phase) -> str:
    """What the wave's pool offers while the wave is out."""
    return ", ".join(f"{_cell(r)} {r.resource}" for r in phase.pool_capacity) or "nothing"


def summary_line(plan: RolloutPlan) -> str:
    data = summary_data(plan)
    assumptions = data["assumptions"]
    return (
        f"{data['waves']} wave(s) ({data['drainingWaves']} draining) over {data['nodes']} node(s), "
        f"{data['steps']} step(s); the waits are bounded at {duration(plan.max_seconds)} in all "
        f"(per node: drain {duration(assumptions['drainTimeoutSeconds'])}, "
        f"MIG re-layout {duration(assumptions['migReconfigureTimeoutSeconds'])}, "
        f"new resources {duration(assumptions['resourcesTimeoutSeconds'])})"
    )


def dip_lines(plan: RolloutPlan) -> list[str]:
    return [
        f"{phase.id}: pool {row.pool} offers {row.available} {row.resource}, {row.short} short of the "
        f"{row.guaranteed} guaranteed to {', '.join(row.tenants)}"
        for phase, row in plan.dips
    ]


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]
    ]


def _phase_text(phase: Phase) -> list[str]:
    lines = ["", _shown(f"{phase.id}: {phase.title}")]
    if phase.pool is not None:
        lines.append(_shown(f"  pool {phase.pool} offers meanwhile: {wave_capacity(phase)}"))
    if phase.unprotected:
        lines.append(
            _shown(
                f"  no PodDisruptionBudget: {', '.join(phase.unprotected)} "
                "(a drain may evict all their pods here at once)"
            )
        )
    for number, step in enumerate(phase.steps, 1):
        lines.append(f"  {number:>2}. {_shown(step.description)}")
        lines.append(f"      $ {_shown(command_line(step))}")
    return lines


@paused()  # see gpustack/collector.py
def render_text(plan: RolloutPlan) -> str:
    lines = [_shown(f"gpustack rollout: {plan.before} -> {plan.after}"), summary_line(plan)]
    lines.append(_shown(f"max unavailable per pool: {plan.max_unavailable}"))
    if not plan.phases:
        return "\n".join([*lines, "", "Nothing to roll out: no node, object or chart changes."]) + "\n"
    header, rows = capacity_rows(plan)
    if rows:
        lines += ["", "Capacity: units available (/ guaranteed by quota before the change; ! below it)"]
        lines += [_shown(line) for line in _aligned(header, rows)]
    if plan.dips:
        lines += ["", "Below the guarantee:"] + [f"  {_shown(line)}" for line in dip_lines(plan)]
    for phase in plan.phases:
        lines += _phase_text(phase)
    if plan.refusals:
        lines += ["", "Refused without --allow-capacity-drop:", format_text(plan.refusals)]
    return "\n".join(lines) + "\n"


def _shown(text: str) -> str:
    """Terminal text on its own line: controls, bidi overrides and line separators escaped (backslashes kept)."""
    return visible(text, backslashes=False)


def _prose(text: str) -> str:
    """Plan text (names from templates, file names) as one line of markdown prose that opens no markup."""
    return _MARKUP.sub(r"\\\1", one_line(text))


def _name(text: str) -> str:
    """A name as a code span on one line."""
    return code(one_line(text))


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(code(cell(c)) if i < 2 else cell(c) for i, c in enumerate(r)) + " |" for r in rows]


def render_markdown_summary(plan: RolloutPlan, heading: str = "##") -> str:
    """The plan's summary alone: what `gpustack diff --output markdown` shows under the review."""
    lines = [f"{heading} Rollout plan", "", summary_line(plan) + ".", ""]
    lines.append(
        f"Max unavailable per pool: {_prose(plan.max_unavailable)}. "
        "Full plan: `gpustack rollout` with the same arguments."
    )
    header, rows = capacity_rows(plan)
    if rows:
        lines += ["", "Units available per wave (/ guaranteed by quota before the change; **!** below it):", ""]
        lines += [line.replace(" !", " **!**") for line in _md_table(header, rows)]
    if plan.dips:
        lines += ["", "**Capacity dips below the tenants' guarantee:**", ""]
        lines += [f"- {_prose(line)}" for line in dip_lines(plan)]
        lines += ["", "`gpustack rollout` refuses this plan without `--allow-capacity-drop`."]
    return "\n".join(lines) + "\n"


@paused()  # see gpustack/collector.py
def render_markdown(plan: RolloutPlan) -> str:
    lines = [f"# Rollout: {_name(plan.before)} → {_name(plan.after)}", "", render_markdown_summary(plan).rstrip("\n")]
    for phase in plan.phases:
        lines += ["", f"### {phase.id}: {_prose(phase.title)}", ""]
        if phase.pool is not None:
            lines += [f"Pool {_name(phase.pool)} offers meanwhile: {_prose(wave_capacity(phase))}.", ""]
        if phase.unprotected:
            lines += [f"No PodDisruptionBudget: {', '.join(_name(w) for w in phase.unprotected)}.", ""]
        for number, step in enumerate(phase.steps, 1):
            lines.append(f"{number}. {_prose(step.description)}  \n   {_name(command_line(step))}")
    if plan.refusals:
        refused = format_text(plan.refusals)
        ticks = fence(refused)
        lines += ["", "**Refused without `--allow-capacity-drop`:**", "", ticks, refused, ticks]
    return "\n".join(lines) + "\n"


def render_json(plan: RolloutPlan) -> str:
    return json_safe(pretty_json(rollout_data(plan))) + "\n"


RENDERERS: dict[str, Callable[[RolloutPlan], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
    "script": render_script,
}

"""Codes of what gpustack writes and plans: the output folder, capped reports, rollouts."""

from __future__ import annotations

from gpustack.codes.record import Stage

_write = Stage("writing the output", "gpustack/write.py")
_report = Stage("reporting", "gpustack/report.py")
_rollout = Stage("planning a rollout", "gpustack/rollout/, gpustack/commands/rollout.py")

OUTPUT_UNSAFE = _write(
    "GS901",
    "the output directory cannot be replaced safely",
    "`compile` cannot replace the output directory safely: it is a file, it holds files gpustack did not write, or "
    "writing failed (the previous output is left as it was).",
    "Point `--out-dir` at an empty or gpustack-made directory, and check the disk.",
)

DIAGNOSTICS_LEFT_OUT = _report(
    "GS902",
    "more diagnostics in one file than a report lists",
    "A file has more than 50 diagnostics. Every output format (text, `--output json`, `--output sarif`) lists the "
    "first 50 of each file and closes with this one, at the first diagnostic left out, saying how many more there "
    "are: a report stays small enough to read, and to upload to GitHub code scanning.",
    "Fix the diagnostics listed (often one mistake repeated) and run again: the next ones are then listed. `--output "
    "json` counts what was left out in each file's `omittedCount`.",
)

ROLLOUT_CAPACITY_DROP = _rollout(
    "GS951",
    "a rollout wave leaves tenants below their guaranteed quota",
    "`gpustack rollout` found a wave that takes enough nodes out at once to leave a tenant with less capacity than "
    "the quota the old blueprint guaranteed it.",
    "Lower `--max-unavailable`, lower the tenant's quota first, or pass `--allow-capacity-drop` if the dip is "
    "accepted.",
)

ROLLOUT_UNSAFE_WORD = _rollout(
    "GS952",
    "plan data the rollout script cannot carry as it is (a NUL byte, a name starting with '-')",
    "`gpustack rollout --output script` found plan data (an object's name or namespace, a node, a label) holding a "
    "NUL byte, which no command-line argument or here-document can carry, or a name starting with `-`, which kubectl "
    "or helm would read as an option (`kubectl delete ConfigMap --all` deletes every ConfigMap). The script is not "
    "written rather than written with a different meaning. The schema and the template check refuse such names "
    "(GS606); this is the script's own guard.",
    "Find the value in the workload templates or the blueprint and give it a DNS-1123 name.",
)

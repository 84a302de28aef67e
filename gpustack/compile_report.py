"""`compile --output json`: what a compile wrote (or would write), for CI and other tools."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from gpustack.diagnostic import Diagnostic
from gpustack.outputs import render_files
from gpustack.plan import Plan
from gpustack.report import file_report


def compile_report(
    file: str,
    plan: Plan | None,
    diagnostics: Sequence[Diagnostic],
    out_dir: str | None,
    written: bool,
    files: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The CompileReport body. `plan` is None when the blueprint is invalid: nothing to describe but why. `files`, the
    folder's files where they are rendered already (a fleet's worker rendered them), else rendered here."""
    report: dict[str, Any] = {**file_report(file, diagnostics), "outDir": out_dir, "written": written}
    if plan is None:
        return report
    files = render_files(plan) if files is None else files
    counts = Counter(m.kind for m in plan.objects)
    return {
        **report,
        "blueprint": plan.blueprint,
        "files": file_entries(files),
        "objectCount": len(plan.objects),
        "objectsByKind": dict(sorted(counts.items())),
        "helmReleases": [
            {
                "name": r.name,
                "chart": r.chart,
                "repository": r.repository,
                "version": r.version,
                "namespace": r.namespace,
                "valuesFile": r.values_file,
            }
            for r in plan.releases
        ],
    }


def file_entries(files: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each file as `path`, `bytes` and `sha256` of its UTF-8 text, in the order given."""
    return [
        {"path": path, "bytes": len(text.encode()), "sha256": hashlib.sha256(text.encode()).hexdigest()}
        for path, text in files.items()
    ]

"""`compile --output json`: what a compile wrote (or would write), for CI and other tools."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gpustack.diagnostic import Diagnostic
from gpustack.outputs import render_files
from gpustack.plan import Plan
from gpustack.report import file_report


def compile_report(
    file: str, plan: Plan | None, diagnostics: Sequence[Diagnostic], out_dir: str | None, written: bool
) -> dict[str, Any]:
    """The CompileReport body. `plan` is None when the blueprint is invalid: nothing to describe but why."""
    report: dict[str, Any] = {**file_report(file, diagnostics), "outDir": out_dir, "written": written}
    if plan is None:
        return report
    files = render_files(plan)
    counts = Counter(m.kind for m in plan.objects)
    return {
        **report,
        "blueprint": plan.blueprint,
        "files": [
            {"path": path, "bytes": len(text.encode()), "sha256": hashlib.sha256(text.encode()).hexdigest()}
            for path, text in files.items()
        ],
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

"""Write docs/codes/GSnnn.md, one page per diagnostic code, from gpustack/codes/.

Each page says what triggers the code, shows it on a real blueprint from tests/cases (the output
gpustack prints today), and how to fix it. Run `python scripts/code_docs.py` after changing
gpustack/codes/ or a message; tests/test_code_docs.py fails while a page is stale.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from gpustack.codes import DIAGNOSTICS_LEFT_OUT, FILE_TOO_LARGE, FILE_UNREADABLE, OUTPUT_UNSAFE

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpustack.codes import CODES, DOCS_FOLDER, REGISTRY, docs_page  # noqa: E402
from gpustack.compile import compile_blueprint  # noqa: E402
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity, Span  # noqa: E402
from gpustack.load import MAX_BYTES  # noqa: E402
from gpustack.report import format_diagnostic, listed  # noqa: E402
from gpustack.validation import Validation, validate_path, validate_text  # noqa: E402
from gpustack.write import write_directory  # noqa: E402

# Where to look for a real example, in this order: the first file that produces the code wins.
EXAMPLE_FOLDERS = ("tests/cases/invalid", "tests/cases/schema", "tests/cases/load", "tests/cases/admission/blueprints")


def _relative(text: str) -> str:
    return text.replace(str(REPO) + "/", "")


def _lines_of(result: Validation) -> dict[str, list[str]]:
    return {result.file: result.document.text.splitlines()} if result.document is not None else {}


def _shown(diagnostic: Diagnostic, lines: dict[str, list[str]]) -> str:
    def lookup(file: str, line: int) -> str:
        text = lines.get(file, [])
        return text[line - 1] if 0 < line <= len(text) else ""

    return _relative(format_diagnostic(diagnostic, lookup))


def _case_examples() -> Iterator[tuple[str, str, str, str]]:
    """(code, case file, command, printed diagnostic) for every diagnostic the cases produce."""
    for folder in EXAMPLE_FOLDERS:
        for case in sorted((REPO / folder).glob("*.yaml")):
            file = case.relative_to(REPO).as_posix()
            result = validate_path(case)
            for diagnostic in result.diagnostics:
                yield diagnostic.code, file, "validate", _shown(diagnostic, _lines_of(result))
            if result.ok and result.blueprint is not None:
                for diagnostic in compile_blueprint(result.context).diagnostics:
                    yield diagnostic.code, file, "compile", _shown(diagnostic, _lines_of(result))


def _made_examples() -> Iterator[tuple[str, str, str, str]]:
    """Codes no blueprint can show: a missing file, a huge file, an output directory gpustack did not write."""
    missing = validate_path("no-such-blueprint.yaml")
    yield FILE_UNREADABLE, "", "validate no-such-blueprint.yaml", _shown(missing.diagnostics[0], {})
    huge = validate_text("#" * (MAX_BYTES + 1), "huge.yaml")
    yield FILE_TOO_LARGE, "", "validate huge.yaml", _shown(huge.diagnostics[0], {})
    quickstart = validate_path(REPO / "blueprints" / "quickstart.yaml")
    assert quickstart.blueprint is not None
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "notes.txt").write_text("mine\n", encoding="utf-8")
        try:
            write_directory(compile_blueprint(quickstart.context), folder)
        except DiagnosticError as error:
            text = _shown(error.diagnostics[0], {}).replace(folder, "out")
            yield OUTPUT_UNSAFE, "", "compile blueprints/quickstart.yaml -d out", text
    yield from _recommend_example()
    yield from _rollout_example()
    yield from _unsafe_word_example()
    yield from _import_examples()
    yield from _left_out_example()
    yield from _fleet_examples()


def _fleet_examples() -> Iterator[tuple[str, str, str, str]]:
    """GS030-GS034 come from `gpustack fleet`: the fleet files under tests/cases/fleet, and GS033 from `fleet drift`
    of the example fleet with no snapshots."""
    from gpustack.fleet.drift import fleet_drift
    from gpustack.fleet.reading import read_fleet
    from gpustack.fleet.resolve import resolve_cluster

    def lines(diagnostic: Diagnostic) -> dict[str, list[str]]:
        files = {span.file for span in (diagnostic.span, *diagnostic.related) if span is not None}
        return {file: (REPO / file).read_text(encoding="utf-8").splitlines() for file in files}

    for case in sorted((REPO / "tests" / "cases" / "fleet").glob("*.yaml")):
        if "\nkind: Fleet\n" not in case.read_text(encoding="utf-8"):
            continue  # the cases' base blueprint
        file = case.relative_to(REPO).as_posix()
        read = read_fleet(file)
        found = list(read.diagnostics)
        if read.ok and read.fleet is not None and read.document is not None:
            for cluster in read.fleet.clusters:
                found += resolve_cluster(read.fleet, read.document, cluster).validation.diagnostics
        for diagnostic in found:
            yield diagnostic.code, "", f"fleet compile {file} -d out", _shown(diagnostic, lines(diagnostic))
    example = "blueprints/fleet/fleet.yaml"
    read = read_fleet(example)
    assert read.fleet is not None and read.document is not None
    with tempfile.TemporaryDirectory() as folder:
        for entry in fleet_drift(read.fleet, read.document, Path(folder)):
            for diagnostic in entry.diagnostics:
                shown = _shown(diagnostic, lines(diagnostic)).replace(folder, "snapshots")
                yield diagnostic.code, "", f"fleet drift {example} snapshots", shown


def _left_out_example() -> Iterator[tuple[str, str, str, str]]:
    """GS902 closes a report of more than 50 diagnostics in one file: 60 pools with a misspelt field each."""
    pools = "".join(f"    - {{name: p{i}, gpu: {{model: L4, count: 1}}, nodes: [n{i}], nodez: 1}}\n" for i in range(60))
    text = "apiVersion: gpustack.io/v1alpha1\nkind: ClusterBlueprint\nmetadata: {name: x}\nspec:\n"
    text += '  kubernetes: {version: "1.31"}\n  nodePools:\n' + pools
    many = validate_text(text, "many.yaml")
    closing = listed(many.diagnostics).diagnostics[-1]
    yield DIAGNOSTICS_LEFT_OUT, "", "validate many.yaml", _shown(closing, _lines_of(many))


def _import_examples() -> Iterator[tuple[str, str, str, str]]:
    """GS020-GS023 come from `gpustack import SNAPSHOT`, on the snapshots under tests/cases/import."""
    from gpustack.cluster.importer import import_snapshot
    from gpustack.cluster.snapshot import read_snapshot

    for case in sorted((REPO / "tests" / "cases" / "import").rglob("*.yaml")):
        file = case.relative_to(REPO).as_posix()
        try:
            snapshot = read_snapshot(str(case))
        except DiagnosticError as error:
            diagnostics, lines = error.diagnostics, {file: case.read_text(encoding="utf-8").splitlines()}
        else:
            diagnostics = import_snapshot(snapshot, case.stem).diagnostics
            lines = {file: snapshot.document.text.splitlines()} if snapshot.document is not None else {}
        for diagnostic in diagnostics:
            shown = _shown(dataclasses.replace(diagnostic, span=_relative_span(diagnostic)), lines)
            yield diagnostic.code, "", f"import {file}", shown


def _relative_span(diagnostic: Diagnostic) -> Span | None:
    span = diagnostic.span
    return span if span is None else dataclasses.replace(span, file=_relative(span.file))


def _recommend_example() -> Iterator[tuple[str, str, str, str]]:
    """GS311 comes from `gpustack recommend`: a pool whose demand fits no layouts within its nodes."""
    from gpustack.recommend import recommend

    file = "tests/cases/recommend/too-small.yaml"
    result = validate_path(REPO / file)
    assert result.context is not None
    for refusal in recommend(result.context)[1]:
        yield refusal.code, file, "recommend", _shown(refusal, _lines_of(result))


def _rollout_example() -> Iterator[tuple[str, str, str, str]]:
    """GS951 needs two blueprints: the rollout case whose new version renames a pool's resource."""
    from gpustack.review.loading import side_from_file
    from gpustack.rollout.planner import plan_rollout

    case = REPO / "tests" / "cases" / "rollout" / "resource-rename"
    before, after = side_from_file(str(case / "old.yaml")), side_from_file(str(case / "new.yaml"))
    assert before.snapshot is not None and after.snapshot is not None and after.validation is not None
    document = after.validation.document
    assert document is not None
    plan = plan_rollout(before.snapshot, after.snapshot, None, document.span)
    lines = _lines_of(after.validation)
    for refusal in plan.refusals:
        command = "rollout tests/cases/rollout/resource-rename/old.yaml tests/cases/rollout/resource-rename/new.yaml"
        yield refusal.code, "", command, _shown(refusal, lines)


def _unsafe_word_example() -> Iterator[tuple[str, str, str, str]]:
    """GS952 is the script's own guard behind GS606: a plan built in code with an object named `x<NUL>y`."""
    from gpustack.codes import ROLLOUT_UNSAFE_WORD
    from gpustack.plan import Manifest
    from gpustack.rollout.model import Phase, PhaseKind, RolloutPlan
    from gpustack.rollout.objects import delete_step
    from gpustack.rollout.script import UnsafeWord, render_script

    manifest = Manifest("workloads", "w.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x\0y"}})
    step = delete_step("finish.01-delete", manifest, "removed from the blueprint")
    plan = RolloutPlan("old.yaml", "new.yaml", "10%", (Phase("finish", PhaseKind.FINISH, "t", (step,)),), (), ())
    try:
        render_script(plan)
    except UnsafeWord as error:
        problem = Diagnostic(ROLLOUT_UNSAFE_WORD, Severity.ERROR, str(error))
        yield ROLLOUT_UNSAFE_WORD, "", "rollout old.yaml new.yaml -o script", _shown(problem, {})


def examples() -> dict[str, tuple[str, str, str]]:
    found: dict[str, tuple[str, str, str]] = {}
    for code, file, command, text in [*_case_examples(), *_made_examples()]:
        found.setdefault(code, (file, command, text))
    return found


def render_page(code: str, example: tuple[str, str, str] | None) -> str:
    record = REGISTRY[code]
    trigger, fix, stage, module = record.trigger, record.fix, record.stage, record.where
    lines = [
        f"# {code}: {CODES[code]}",
        "",
        f"Stage: {stage} (`{module}`).",
        "",
        "## What triggers it",
        "",
        trigger,
        "",
        "## Example",
        "",
    ]
    if example is None:
        lines += ["No shipped blueprint shows this code yet.", ""]
    else:
        file, command, text = example
        shown = f"gpustack {command} {file}" if file else f"gpustack {command}"
        shown += " -d out" if command == "compile" and file else ""
        if file:
            lines += [f"From [`{file}`](../../{file}):", ""]
        lines += ["```text", f"$ {shown}", text, "```", ""]
    lines += ["## The fix", "", fix, "", "All codes: [the index](README.md).", ""]
    return "\n".join(lines)


def render_index() -> str:
    lines = [
        "# Diagnostic codes",
        "",
        "Every problem gpustack reports carries a code; each page says what triggers it, shows it on a",
        "blueprint and how to fix it. Generated by `python scripts/code_docs.py` from `gpustack/codes/`.",
        "",
        "| code | what it means |",
        "|---|---|",
    ]
    lines += [f"| [{code}]({code}.md) | {summary} |" for code, summary in sorted(CODES.items())]
    return "\n".join(lines) + "\n"


def render_pages() -> dict[str, str]:
    """Relative path -> text for every page under docs/codes/."""
    found = examples()
    pages = {docs_page(code): render_page(code, found.get(code)) for code in sorted(CODES)}
    pages[f"{DOCS_FOLDER}/README.md"] = render_index()
    return pages


def main(argv: Sequence[str] = ()) -> int:
    folder = REPO / DOCS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    pages = render_pages()
    for stale in folder.glob("*.md"):
        if f"{DOCS_FOLDER}/{stale.name}" not in pages:
            stale.unlink()
    for path, text in pages.items():
        (REPO / path).write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} pages to {DOCS_FOLDER}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

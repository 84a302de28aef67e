"""The front half of the pipeline: text -> Document -> shape -> Blueprint -> semantic checks."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.checks import run_checks
from gpustack.compile.templates import TEMPLATE_ERROR
from gpustack.compile.workloads import compile_workloads
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity, Span, has_errors
from gpustack.load import Document, parse_document, read_document
from gpustack.model import Blueprint
from gpustack.schema import check_shape


@dataclass(frozen=True)
class Validation:
    file: str
    document: Document | None
    blueprint: Blueprint | None  # None when the shape is wrong: semantic checks need a well-formed blueprint
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    def strict(self) -> Validation:
        """Warnings count as errors."""
        promoted = tuple(d.as_error() if d.severity is Severity.WARNING else d for d in self.diagnostics)
        return Validation(self.file, self.document, self.blueprint, promoted)


def validate_document(document: Document) -> Validation:
    shape = check_shape(document)
    if shape:
        return Validation(document.file, document, None, tuple(shape))
    blueprint = build_blueprint(document.data, document.file)
    return Validation(
        document.file, document, blueprint, tuple(run_checks(blueprint, load_catalog(), _locator(document)))
    )


def _locator(document: Document) -> Callable[[JsonPath, bool], Span | None]:
    """Where a path (or its key) stands in the document, for checks that only know paths."""

    def locate(path: JsonPath, key: bool) -> Span | None:
        return document.span(path, key=key)

    return locate


def validate_text(text: str | bytes, file: str) -> Validation:
    try:
        document = parse_document(text, file)
    except DiagnosticError as error:
        return Validation(file, None, None, error.diagnostics)
    return validate_document(document)


MAX_TEMPLATE_BYTES = 1024 * 1024


def validate_path(path: str | os.PathLike[str]) -> Validation:
    name = os.fspath(path)
    try:
        document = read_document(path)
    except DiagnosticError as error:
        return Validation(name, None, None, error.diagnostics)
    result = validate_document(document)
    if result.blueprint is None or not any(w.template for w in result.blueprint.workloads):
        return result
    base = Path(name).parent if name != "-" else Path.cwd()
    return _with_templates(result, base)


def _with_templates(result: Validation, base: Path) -> Validation:
    """Read the workload templates a blueprint names, relative to the blueprint's folder."""
    assert result.blueprint is not None and result.document is not None
    texts: dict[str, str] = {}
    problems: list[Diagnostic] = []
    for workload in result.blueprint.workloads:
        if workload.template is None or workload.template in texts:
            continue
        path = (*workload.path, "template")
        try:
            file = base / workload.template
            if not file.is_file():  # a device or a pipe could be endless; a directory has no text
                raise OSError(f"{file} is not a regular file")
            if file.stat().st_size > MAX_TEMPLATE_BYTES:
                raise OSError(f"larger than {MAX_TEMPLATE_BYTES} bytes")
            texts[workload.template] = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            problems.append(
                Diagnostic(
                    "GS605",
                    Severity.ERROR,
                    f"cannot read template '{workload.template}' of workload '{workload.name}': {error}",
                    result.document.span(path),
                    path,
                    "template paths are relative to the blueprint's folder",
                )
            )
    blueprint = dataclasses.replace(result.blueprint, templates=tuple(sorted(texts.items())))
    if not has_errors((*result.diagnostics, *problems)):
        problems.extend(_rendered_template_problems(blueprint, result.document))
    return Validation(
        result.file,
        result.document,
        blueprint,
        tuple(sorted((*result.diagnostics, *problems), key=Diagnostic.sort_key)),
    )


def _rendered_template_problems(blueprint: Blueprint, document: Document) -> list[Diagnostic]:
    """Render the templates as compile would, so `validate` fails exactly where `compile` would (GS606)."""
    output = compile_workloads(Context(blueprint, load_catalog(), _locator(document)))
    return [d for d in output.diagnostics if d.code == TEMPLATE_ERROR]

"""The front half of the pipeline: text -> Document -> shape -> Blueprint (and its workload templates) -> checks.

Every command reads a blueprint through here, and its workload templates through `read_templates`, the one door
that confines them: a template is a relative path inside the blueprint's folder (on disk, or at a git revision).
A valid blueprint's `Validation` keeps the `Context` the checks ran on: compile, capacity, graph, simulate, drift
and review take that one, so a command derives each fact once and every diagnostic points into the text.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.checks import run_checks
from gpustack.codes import TEMPLATE_UNREADABLE
from gpustack.collector import paused
from gpustack.context import Context, Locate, unplaced
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity, Span, has_errors, sort_diagnostics
from gpustack.load import MAX_BYTES, Document, parse_document, read_document
from gpustack.model import Blueprint
from gpustack.report import SourceLine
from gpustack.schema import check_shape

MAX_TEMPLATE_BYTES = 1024 * 1024
FOLDER_HINT = "template paths are relative to the blueprint's folder"
CONFINED_HINT = (
    "a template path is relative and stays inside the blueprint's folder (no absolute path, no '..', no symlink "
    "out of it): move or copy the template next to the blueprint"
)


class TemplateUnreadable(Exception):
    """Why a workload template cannot be read, and what to do about it (a GS605 at its `template:` line)."""

    def __init__(self, reason: str, hint: str = FOLDER_HINT) -> None:
        super().__init__(reason)
        self.hint = hint


# A template path as the blueprint writes it -> its text; raises TemplateUnreadable.
ReadTemplate = Callable[[str], str]


@dataclass(frozen=True)
class Validation:
    file: str
    document: Document | None
    blueprint: Blueprint | None  # None when the shape is wrong: semantic checks need a well-formed blueprint
    diagnostics: tuple[Diagnostic, ...]
    context: Context | None = None  # what the checks ran on (None with the blueprint): every later stage takes it

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    def strict(self) -> Validation:
        """Warnings count as errors."""
        promoted = tuple(d.as_error() if d.severity is Severity.WARNING else d for d in self.diagnostics)
        return dataclasses.replace(self, diagnostics=promoted)

    def text_only(self) -> Validation:
        """This result with its document holding only its text, its context's locator too (`Document.text_only`):
        what compile keeps once validation has read the data; the same spans are found again from the text."""
        if self.document is None:
            return self
        locate = self.context.locate if self.context is not None else None
        if isinstance(locate, DocumentLocator) and locate.document is self.document:
            return dataclasses.replace(self, document=locate.keep_text_only())
        return dataclasses.replace(self, document=self.document.text_only())


def validate_document(document: Document, read_template: ReadTemplate | None = None) -> Validation:
    """Shape, then the blueprint with the templates `read_template` gives (none read without it), then the checks."""
    with paused() as pause:  # see gpustack/collector.py
        shape = check_shape(document)
        if shape:
            return Validation(document.file, document, None, tuple(document.note_aliases(shape)))
        blueprint = build_blueprint(document.data, document.file)
        locate = document_locator(document)
        unread: list[Diagnostic] = []
        if read_template is not None:
            blueprint, unread = read_templates(blueprint, read_template, locate)
        context = Context(blueprint, load_catalog(), locate)  # the run's one Context for this blueprint
        found = run_checks(context)
        noted = document.note_aliases(sort_diagnostics([*found, *unread]))  # where an aliased value is written
        # Without a template to render validation makes no cycle (a Jinja sandbox is its only one, and
        # tests/test_collector.py holds it to that): what it built needs no walk by the young collection.
        pause.acyclic = not blueprint.templates
        return Validation(document.file, document, blueprint, tuple(noted), context)


class DocumentLocator:
    """Where a path (or its key) stands in a document: the locator of every Context read from text.

    It holds the document, so that a command can let go of the parsed data once validation has read it
    (`Validation.text_only`): later spans are found again from the text, as the loaded document gives them.
    """

    def __init__(self, document: Document) -> None:
        self.document = document

    def __call__(self, path: JsonPath, key: bool) -> Span | None:
        return self.document.span(path, key=key)

    def keep_text_only(self) -> Document:
        self.document = self.document.text_only()
        return self.document


def document_locator(document: Document) -> Locate:
    """Where a path (or its key) stands in the document, for checks that only know paths."""
    return DocumentLocator(document)


def validate_blueprint(blueprint: Blueprint) -> Validation:
    """A Blueprint built in code (a Pulumi program's `GpuClusterArgs.blueprint`), through the same checks as a file.

    It has no text, so its context is `unplaced`: a diagnostic names its JSON path. Its templates are the ones it
    holds (whoever built it read them).
    """
    context = Context(blueprint, load_catalog(), unplaced)
    return Validation(blueprint.source, None, blueprint, tuple(run_checks(context)), context)


def validate_text(text: str | bytes, file: str, read_template: ReadTemplate | None = None) -> Validation:
    try:
        document = parse_document(text, file)
    except DiagnosticError as error:
        return Validation(file, None, None, error.diagnostics)
    return validate_document(document, read_template)


def validate_path(path: str | os.PathLike[str]) -> Validation:
    """A blueprint file (or - for standard input), with its templates read from its folder."""
    name = os.fspath(path)
    try:
        document = read_document(path)
    except DiagnosticError as error:
        return Validation(name, None, None, error.diagnostics)
    base = Path(name).parent if name != "-" else Path.cwd()
    return validate_document(document, folder_templates(base))


def read_templates(blueprint: Blueprint, read: ReadTemplate, locate: Locate) -> tuple[Blueprint, list[Diagnostic]]:
    """The blueprint with the text of every template its workloads name, and a GS605 for each one unreadable."""
    texts: dict[str, str] = {}
    problems: list[Diagnostic] = []
    for workload in blueprint.workloads:
        if workload.template is None or workload.template in texts:
            continue
        path = (*workload.path, "template")
        try:
            texts[workload.template] = read(workload.template)
        except TemplateUnreadable as error:
            problems.append(
                Diagnostic(
                    TEMPLATE_UNREADABLE,
                    Severity.ERROR,
                    f"cannot read template '{workload.template}' of workload '{workload.name}': {error}",
                    locate(path, False),
                    path,
                    error.hint,
                )
            )
    return dataclasses.replace(blueprint, templates=tuple(sorted(texts.items()))), problems


def confined_template(template: str) -> PurePosixPath:
    """A template path that cannot leave the blueprint's folder by its spelling: relative, without '..'.

    A template is user input that ends up applied in a tenant's namespace and quoted in review comments: a path
    out of the folder would copy any file the user can read (another team's Secret) into both.
    """
    path = PurePosixPath(template)
    if path.is_absolute():
        raise TemplateUnreadable("an absolute path; templates are read only from the blueprint's folder", CONFINED_HINT)
    if ".." in path.parts:
        raise TemplateUnreadable("the path goes up with '..', out of the blueprint's folder", CONFINED_HINT)
    return path


def folder_templates(folder: Path) -> ReadTemplate:
    """Templates read from a folder on disk, each resolved (symlinks followed) and kept inside it."""

    # No message names an absolute path (GS605 reaches CI logs and code scanning): the reason, and the path as the
    # blueprint wrote it, which its line already shows.
    def read(template: str) -> str:
        relative = confined_template(template)
        root = folder.resolve()
        try:
            file = (root / relative).resolve(strict=True)
        except RuntimeError as error:  # a symlink loop, before Python 3.13
            raise TemplateUnreadable("a symlink loop") from error
        except OSError as error:  # missing, unreadable folder, or a symlink loop
            raise TemplateUnreadable(error.strerror or "cannot be resolved") from error
        if not file.is_relative_to(root):
            raise TemplateUnreadable("a symlink leads out of the blueprint's folder", CONFINED_HINT)
        try:
            if not file.is_file():  # a device or a pipe could be endless; a directory has no text
                raise TemplateUnreadable("not a regular file")
            if file.stat().st_size > MAX_TEMPLATE_BYTES:
                raise TemplateUnreadable(f"larger than {MAX_TEMPLATE_BYTES} bytes")
            return file.read_text(encoding="utf-8")
        except OSError as error:
            raise TemplateUnreadable(error.strerror or "cannot be read") from error
        except UnicodeDecodeError as error:
            raise TemplateUnreadable(f"not UTF-8 text ({error.reason} at byte {error.start})") from error

    return read


def source_lines(results: Sequence[Validation]) -> SourceLine:
    """The one lookup from (file, line) to its text, for diagnostics that show their source line and a caret.

    A file that did not load (not UTF-8, not YAML) is read again for display only, best effort.
    """
    documents = {r.file: r.document for r in results if r.document is not None}
    for result in results:
        if result.file not in documents and result.file != "-":
            shown = _read_for_display(result.file)
            if shown is not None:
                documents[result.file] = shown

    def lookup(file: str, line: int) -> str:
        document = documents.get(file)
        return document.source_line(line) if document is not None else ""

    return lookup


def _read_for_display(file: str) -> Document | None:
    """The text of a file that failed to load, so its diagnostics can still show the line.

    Only regular files under the size cap: a device or a pipe could be endless, and was refused already.
    """
    try:
        if not os.path.isfile(file) or os.path.getsize(file) > MAX_BYTES:
            return None
        with open(file, "rb") as handle:
            text = handle.read(MAX_BYTES + 1).decode("utf-8", errors="replace")
    except OSError:
        return None
    return Document(file, text, None, {}, {})

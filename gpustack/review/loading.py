"""The two sides of a review, read from files or from git, validated exactly as `gpustack validate` would."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpustack.diagnostic import Diagnostic, Severity
from gpustack.load import MAX_BYTES
from gpustack.review.revision import Revision, TooLarge, open_revision, renamed_from, template_path
from gpustack.review.snapshot import Snapshot, empty_snapshot
from gpustack.validation import MAX_TEMPLATE_BYTES, Validation, validate_path, validate_text


@dataclass(frozen=True)
class Side:
    snapshot: Snapshot | None  # None when the blueprint is invalid
    validation: Validation | None  # None when the file did not exist at the revision


def _side(label: str, validation: Validation) -> Side:
    if not validation.ok or validation.blueprint is None:
        return Side(None, validation)
    return Side(Snapshot(label, validation.blueprint), validation)


def side_from_file(path: str) -> Side:
    return _side(path, validate_path(path))


def side_at_revision(blueprint: str, name: str) -> Side:
    """The blueprint as it was at revision `name`; a file absent there is an empty side (everything is added).

    Raises RevisionError when git cannot answer.
    """
    revision, relative = open_revision(blueprint, name)
    label = f"{name}:{relative}"
    base = relative
    text = _read_capped(revision, base, label)
    if text is None:
        # Renamed (git mv) since the base: review against the old name, or a rename would skip the review (M5).
        old = renamed_from(revision, relative)
        if old is not None:
            base, label = old, f"{name}:{old} (renamed to {relative})"
            text = _read_capped(revision, base, label)
    if isinstance(text, Validation):
        return _side(label, text)
    if text is None:
        return Side(empty_snapshot(f"{label} (absent)"), None)
    validation = validate_text(text, label)
    if validation.ok and validation.blueprint is not None:
        validation = _with_templates(validation, revision, base)
    return _side(label, validation)


def _read_capped(revision: Revision, path: str, label: str) -> bytes | Validation | None:
    """The blueprint's bytes at the revision, or a GS002 result when the blob is over the size cap (L5)."""
    try:
        return revision.read(path, limit=MAX_BYTES)
    except TooLarge as error:
        problem = Diagnostic(
            "GS002", Severity.ERROR, f"{label}: {error}", None, (), "a blueprint is a few kilobytes; check the revision"
        )
        return Validation(label, None, None, (problem,))


def _with_templates(validation: Validation, revision: Revision, blueprint: str) -> Validation:
    """Workload templates as they were at the revision too, so the old Plan is the one that revision compiled."""
    assert validation.blueprint is not None
    texts: dict[str, str] = {}
    problems: list[Diagnostic] = []
    for workload in validation.blueprint.workloads:
        if workload.template is None or workload.template in texts:
            continue
        where = template_path(blueprint, workload.template)
        data = revision.read(where, limit=MAX_TEMPLATE_BYTES) if where is not None else None
        try:
            if data is None:
                raise ValueError(f"not in {revision.name}")
            texts[workload.template] = data.decode("utf-8")
        except (ValueError, UnicodeDecodeError) as error:  # TooLarge is a ValueError
            path = (*workload.path, "template")
            span = validation.document.span(path) if validation.document is not None else None
            problems.append(
                Diagnostic(
                    "GS605",
                    Severity.ERROR,
                    f"cannot read template '{workload.template}' of workload '{workload.name}': {error}",
                    span,
                    path,
                    "template paths are relative to the blueprint's folder and must be committed with it",
                )
            )
    read = dataclasses.replace(validation.blueprint, templates=tuple(sorted(texts.items())))
    return Validation(validation.file, validation.document, read, (*validation.diagnostics, *problems))

"""The two sides of a review, read from files or from git, validated exactly as `gpustack validate` would."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from gpustack.codes import FILE_TOO_LARGE
from gpustack.diagnostic import Diagnostic, Severity
from gpustack.load import MAX_BYTES
from gpustack.review.revision import Revision, TooLarge, open_revision, renamed_from
from gpustack.review.snapshot import Snapshot, empty_snapshot
from gpustack.validation import (
    CONFINED_HINT,
    MAX_TEMPLATE_BYTES,
    ReadTemplate,
    TemplateUnreadable,
    Validation,
    confined_template,
    validate_path,
    validate_text,
)


@dataclass(frozen=True)
class Side:
    snapshot: Snapshot | None  # None when the blueprint is invalid
    validation: Validation | None  # None when the file did not exist at the revision


def _side(label: str, validation: Validation) -> Side:
    if not validation.ok or validation.blueprint is None:
        return Side(None, validation)
    return Side(Snapshot(label, validation.context), validation)


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
    return _side(label, validate_text(text, label, revision_templates(revision, base)))


def _read_capped(revision: Revision, path: str, label: str) -> bytes | Validation | None:
    """The blueprint's bytes at the revision, or a GS002 result when the blob is over the size cap (L5)."""
    try:
        return revision.read(path, limit=MAX_BYTES)
    except TooLarge as error:
        problem = Diagnostic(
            FILE_TOO_LARGE,
            Severity.ERROR,
            f"{label}: {error}",
            None,
            (),
            "a blueprint is a few kilobytes; check the revision",
        )
        return Validation(label, None, None, (problem,))


def revision_templates(revision: Revision, blueprint: str) -> ReadTemplate:
    """Workload templates as they were at the revision too, so the old Plan is the one that revision compiled."""

    def read(template: str) -> str:
        where = posixpath.normpath(posixpath.join(posixpath.dirname(blueprint), confined_template(template).as_posix()))
        if revision.is_link(where):
            raise TemplateUnreadable(f"a symlink in {revision.name}; a template must be a file", CONFINED_HINT)
        try:
            data = revision.read(where, limit=MAX_TEMPLATE_BYTES)
        except TooLarge as error:
            raise TemplateUnreadable(str(error)) from error
        if data is None:
            raise TemplateUnreadable(
                f"not in {revision.name}",
                "template paths are relative to the blueprint's folder and must be committed with it",
            )
        if len(data) > MAX_TEMPLATE_BYTES:
            raise TemplateUnreadable(f"larger than {MAX_TEMPLATE_BYTES} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TemplateUnreadable(str(error)) from error

    return read

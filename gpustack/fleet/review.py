"""`gpustack fleet diff --base REV FLEET`: one review of a change across every cluster it touches.

Both sides are resolved as `fleet compile` resolves them: the working tree's, and the fleet file with its base and
overlays as they were at REV (read from git, confined as on disk: a relative path, no link). Per cluster the review
is `gpustack diff`'s (gpustack.review.review_change on the two sides' Snapshots); fleet-wide, the physical GPUs per
GPU model before and after, and the clusters a change to the base reaches.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gpustack.codes import FLEET_FILE_UNREADABLE
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity
from gpustack.escapes import printable
from gpustack.fleet.model import Fleet
from gpustack.fleet.reading import CONFINED_HINT, FleetRead, fleet_from_document, read_fleet
from gpustack.fleet.resolve import ResolvedCluster, resolve_cluster
from gpustack.load import MAX_BYTES, Document, parse_document
from gpustack.review.loading import revision_templates
from gpustack.review.report import COMMENT_MARKER, RENDERERS
from gpustack.review.review import Review, review_change
from gpustack.review.revision import Revision, TooLarge, open_revision
from gpustack.review.snapshot import Snapshot, empty_snapshot
from gpustack.validation import ReadTemplate, confined_template

API_VERSION = "gpustack.io/v1alpha1"
REVIEW_MARKER = COMMENT_MARKER + "\n"
FLEET_MARKER = "<!-- gpustack-fleet-review -->"


@dataclass(frozen=True)
class RevisionFiles:
    """A fleet's files as they were at a git revision: paths relative to the fleet file's folder there."""

    revision: Revision
    folder: str  # the fleet file's folder, relative to the repository root
    document: Document  # the fleet file at the revision

    def _where(self, relative: str) -> str:
        return posixpath.normpath(posixpath.join(self.folder, confined_template(relative).as_posix()))

    def read(self, relative: str, at: JsonPath) -> Document:
        where = self._where(relative)
        label = f"{self.revision.name}:{where}"
        try:
            if self.revision.is_link(where):
                raise ValueError(f"a symlink in {self.revision.name}; a fleet names files, not links")
            data = self.revision.read(where, limit=MAX_BYTES)
        except (TooLarge, ValueError) as error:
            raise self._unreadable(relative, str(error), at) from error
        if data is None:
            raise self._unreadable(relative, f"not in {self.revision.name}", at)
        return parse_document(data, label)

    def _unreadable(self, relative: str, reason: str, at: JsonPath) -> DiagnosticError:
        message = f"cannot read '{relative}' at {self.revision.name}: {reason}"
        span = self.document.span(at)
        return DiagnosticError([Diagnostic(FLEET_FILE_UNREADABLE, Severity.ERROR, message, span, at, CONFINED_HINT)])

    def templates(self, relative: str) -> ReadTemplate:
        return revision_templates(self.revision, self._where(relative))


@dataclass(frozen=True)
class ClusterReview:
    name: str
    review: Review
    from_base: bool  # built from the fleet's base on either side: a change to the base reaches it


@dataclass(frozen=True)
class FleetReview:
    revision: str
    fleet: str
    clusters: tuple[ClusterReview, ...]
    base_changed: bool
    invalid: tuple[ResolvedCluster | FleetRead, ...]  # what could not be resolved, on either side

    @property
    def changed(self) -> bool:
        return any(cluster.review.changed for cluster in self.clusters)

    def gpus(self, after: bool) -> dict[str, int]:
        """Physical GPUs per GPU model, over every cluster."""
        count: Counter[str] = Counter()
        for cluster in self.clusters:
            side = cluster.review.after if after else cluster.review.before
            for pool in side.capacity.pools if side.capacity is not None else ():
                count[pool.model or "cpu"] += pool.physical_gpus
        return dict(sorted(count.items()))

    @property
    def reached(self) -> list[str]:
        return [cluster.name for cluster in self.clusters if cluster.from_base] if self.base_changed else []


def old_fleet(fleet_file: str, revision_name: str) -> tuple[FleetRead | None, RevisionFiles | None]:
    """The fleet file at the revision, and how to read its files there; (None, None) when it was not there.

    Raises RevisionError when git cannot answer."""
    revision, relative = open_revision(fleet_file, revision_name)
    label = f"{revision_name}:{relative}"
    try:
        data = revision.read(relative, limit=MAX_BYTES)
        if data is None:
            return None, None
        document = parse_document(data, label)
    except (TooLarge, DiagnosticError) as error:
        problems = (
            error.diagnostics
            if isinstance(error, DiagnosticError)
            else (Diagnostic(FLEET_FILE_UNREADABLE, Severity.ERROR, f"{label}: {error}"),)
        )
        return FleetRead(label, None, None, tuple(problems)), None
    return fleet_from_document(document), RevisionFiles(revision, posixpath.dirname(relative), document)


def _side(read: FleetRead | None, files: RevisionFiles | None, name: str) -> ResolvedCluster | None:
    if read is None or read.fleet is None or read.document is None:
        return None
    cluster = read.fleet.cluster(name)
    return None if cluster is None else resolve_cluster(read.fleet, read.document, cluster, files)


def _snapshot(resolved: ResolvedCluster | None, label: str) -> Snapshot:
    if resolved is None:
        return empty_snapshot(f"{label} (absent)")
    return Snapshot(label, resolved.validation.context)


def _base_text(read: FleetRead | None, files: RevisionFiles | None) -> str | None:
    fleet = read.fleet if read is not None else None
    if fleet is None or fleet.base is None or read is None or read.document is None:
        return None
    try:
        if files is not None:
            return files.read(fleet.base, ("spec", "base")).text
        from gpustack.fleet.reading import read_named

        return read_named(fleet, read.document, fleet.base, ("spec", "base")).text
    except DiagnosticError:
        return None


def review_fleet(fleet_file: str, revision_name: str) -> FleetReview:
    """Every cluster of the fleet (either side's) reviewed. Raises RevisionError when git cannot answer."""
    new = read_fleet(fleet_file)
    old, files = old_fleet(fleet_file, revision_name)
    invalid: list[ResolvedCluster | FleetRead] = [read for read in (old, new) if read is not None and not read.ok]
    if invalid:
        return FleetReview(revision_name, fleet_file, (), False, tuple(invalid))
    names = list(dict.fromkeys([*_names(new.fleet), *_names(old.fleet if old is not None else None)]))
    reviews = []
    for name in names:
        before, after = _side(old, files, name), _side(new, None, name)
        broken = [side for side in (before, after) if side is not None and not side.ok]
        if broken:
            invalid.extend(broken)
            continue
        review = review_change(
            _snapshot(before, f"{revision_name}: cluster {name}"), _snapshot(after, f"cluster {name}")
        )
        reviews.append(ClusterReview(name, review, _from_base(old, name) or _from_base(new, name)))
    base_changed = _base_text(old, files) != _base_text(new, None)
    return FleetReview(revision_name, fleet_file, tuple(reviews), base_changed, tuple(invalid))


def _names(fleet: Fleet | None) -> list[str]:
    return [] if fleet is None else [cluster.name for cluster in fleet.clusters]


def _from_base(read: FleetRead | None, name: str) -> bool:
    fleet = read.fleet if read is not None else None
    cluster = fleet.cluster(name) if fleet is not None else None
    return cluster is not None and cluster.blueprint is None


# --- reporters ---------------------------------------------------------------------------------------------------


def _capacity_rows(review: FleetReview) -> list[tuple[str, int, int]]:
    before, after = review.gpus(False), review.gpus(True)
    return [(model, before.get(model, 0), after.get(model, 0)) for model in sorted({*before, *after})]


def _reach_line(review: FleetReview) -> str:
    if not review.base_changed:
        return "the base is unchanged"
    changed = [c.name for c in review.clusters if c.from_base and c.review.changed]
    return (
        f"the base changed: it reaches {len(review.reached)} cluster(s) ({', '.join(review.reached)}); "
        f"{len(changed)} of them change ({', '.join(changed) or 'none'})"
    )


def render_text(review: FleetReview) -> str:
    changed = [c.name for c in review.clusters if c.review.changed]
    lines = [
        f"fleet {review.fleet} against {review.revision}: {len(changed)} of {len(review.clusters)} cluster(s) change"
        + (f" ({', '.join(changed)})" if changed else ""),
        _reach_line(review),
        "",
        "GPUs per model, whole fleet (before -> after):",
    ]
    lines += [f"  {model}: {old} -> {new} ({new - old:+d})" for model, old, new in _capacity_rows(review)]
    for cluster in review.clusters:
        lines += ["", f"== cluster {cluster.name}" + ("" if cluster.review.changed else ": no change")]
        if cluster.review.changed:
            lines.append(RENDERERS["text"](cluster.review).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return printable(text).replace("|", "\\|").replace("`", "'").replace("<", "&lt;")


def render_markdown(review: FleetReview) -> str:
    lines = [
        FLEET_MARKER,
        f"## Fleet review: `{_cell(review.fleet)}` against `{_cell(review.revision)}`",
        "",
        _cell(_reach_line(review)) + ".",
        "",
        "| cluster | changes | risks | from the base |",
        "|---|---|---:|---|",
    ]
    for cluster in review.clusters:
        state = "changed" if cluster.review.changed else "no change"
        lines.append(
            f"| {cluster.name} | {state} | {len(cluster.review.risks)} | {'yes' if cluster.from_base else 'no'} |"
        )
    lines += [
        "",
        "### GPUs per model, whole fleet",
        "",
        "| GPU model | before | after | change |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {_cell(model)} | {old} | {new} | {new - old:+d} |" for model, old, new in _capacity_rows(review)]
    for cluster in review.clusters:
        if cluster.review.changed:
            # One marker for the whole comment (a bot finds and updates it by the marker), not one per cluster.
            body = RENDERERS["markdown"](cluster.review).replace(REVIEW_MARKER, "").strip("\n")
            lines += ["", f"<details><summary>cluster {cluster.name}</summary>", "", body, "", "</details>"]
    return "\n".join(lines) + "\n"


def review_data(review: FleetReview) -> dict[str, Any]:
    import json

    return {
        "fleet": review.fleet,
        "revision": review.revision,
        "changed": review.changed,
        "baseChanged": review.base_changed,
        "reached": review.reached,
        "gpus": [{"model": model, "before": old, "after": new} for model, old, new in _capacity_rows(review)],
        "clusters": [
            {
                "name": cluster.name,
                "fromBase": cluster.from_base,
                "changed": cluster.review.changed,
                "review": json.loads(RENDERERS["json"](cluster.review)),
            }
            for cluster in review.clusters
        ],
    }

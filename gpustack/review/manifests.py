"""What a change does to the compiled output: objects, Helm releases and artefacts added, changed or removed.

Objects are matched by apiVersion/kind/namespace/name (a move between output files is no change to the
cluster), and each changed one gets a unified diff of its YAML, so a reviewer sees exactly what apply will do.
An object that several output families patch (a Node: its labels in nodes/nodes.yaml, its taints in
nodes/taints.yaml) is one item per family, keyed `KEY#FAMILY`, so that no patch hides another.
"""

from __future__ import annotations

import difflib
import marshal
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpustack.plan import Manifest, Plan
from gpustack.review.changes import Status
from gpustack.yamlout import Writer


@dataclass(frozen=True)
class Item:
    """One thing `gpustack compile` outputs, rendered as the text that is written or applied."""

    key: str
    kind: str  # a Kubernetes kind, HelmRelease, or File for artefacts
    name: str
    namespace: str | None
    file: str
    source: Any = field(repr=False)  # what is rendered: the object, the described release, or the file text
    render: Callable[[Any], str] = field(repr=False, compare=False)

    @cached_property
    def text(self) -> str:
        """Rendered on first use: objects that did not change are never written out."""
        return self.render(self.source)


def _same(a: Any, b: Any) -> bool:
    """Equal and written alike: the same types, the same key order, floats bit for bit (0.0 is not -0.0).

    marshal writes exactly these (bool apart from int, tuple apart from list, dicts in their order), in C: most
    objects of a plan do not change, and walking them in Python cost more than compiling. Format 2 writes no
    back-references, so equal data gives equal bytes whatever objects it shares. Anything marshal cannot write is
    compared by its rendered text instead.
    """
    try:
        return marshal.dumps(a, _NO_REFERENCES) == marshal.dumps(b, _NO_REFERENCES)
    except ValueError:
        return False


_NO_REFERENCES = 2  # marshal format 3 and later refer back to objects seen twice


def _text(text: str) -> str:
    return text


@dataclass(frozen=True)
class ObjectChange:
    key: str
    kind: str
    name: str
    namespace: str | None
    file: str  # where it is written (the new version's file, unless removed)
    status: Status
    diff: str  # unified diff, old to new

    @property
    def title(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def split_keys(*plans: Plan) -> frozenset[str]:
    """Object keys that more than one output family writes, in any of the plans."""
    first: dict[str, str] = {}  # key -> the first family seen writing it
    split: set[str] = set()
    for plan in plans:
        for manifest in plan.objects:
            key = manifest.key
            if first.setdefault(key, manifest.family) != manifest.family:
                split.add(key)
    return frozenset(split)


Output = Manifest | Item


def plan_outputs(
    plan: Plan, split: frozenset[str] | None = None, dump: Callable[[Any], str] | None = None
) -> dict[str, Output]:
    """The plan's outputs by key; an object in `split` (by default: written by several families) per family.

    Objects stay Manifests until one is found changed (`as_item`): most objects of a plan do not change, and at
    fleet size making an Item of each cost more than comparing them.
    """
    split = split_keys(plan) if split is None else split
    dump = dump or Writer().dump  # one writer per plan: each distinct string's style is chosen once
    outputs: dict[str, Output] = {}
    for manifest in plan.objects:
        key = manifest.key
        outputs[f"{key}#{manifest.family}" if key in split else key] = manifest
    for release in plan.releases:
        described = {
            "chart": release.chart,
            "repository": release.repository,
            "version": release.version,
            "namespace": release.namespace,
            "values": release.values,
        }
        key = f"helm/{release.namespace}/{release.name}"
        outputs[key] = Item(key, "HelmRelease", release.name, release.namespace, release.values_file, described, dump)
    for artifact in plan.artifacts:
        key = f"file/{artifact.path}"
        outputs[key] = Item(key, "File", artifact.path, None, artifact.path, artifact.text, _text)
    return outputs


def as_item(key: str, output: Output, dump: Callable[[Any], str]) -> Item:
    if isinstance(output, Item):
        return output
    return Item(key, output.kind, output.name, output.namespace, output.file, output.obj, dump)


def _source(output: Output) -> Any:
    return output.source if isinstance(output, Item) else output.obj


def unified_diff(key: str, old: str, new: str, context: int = 3) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{key}", f"b/{key}", n=context
    )
    # A last line without a newline would run into the next one; mark it the way diff(1) does.
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def manifest_changes(before: Plan, after: Plan) -> tuple[ObjectChange, ...]:
    """Changes in the new plan's apply order, then removed objects in the old plan's order."""
    split = split_keys(before, after)
    dump_old, dump_new = Writer().dump, Writer().dump
    old, new = plan_outputs(before, split, dump_old), plan_outputs(after, split, dump_new)
    changes: list[ObjectChange] = []
    for key, output in new.items():
        previous = old.get(key)
        if previous is not None and _same(_source(previous), _source(output)):
            continue
        item = as_item(key, output, dump_new)
        was = as_item(key, previous, dump_old) if previous is not None else None
        if was is not None and was.text == item.text:
            continue
        status = Status.ADDED if was is None else Status.CHANGED
        diff = unified_diff(key, "" if was is None else was.text, item.text)
        changes.append(ObjectChange(key, item.kind, item.name, item.namespace, item.file, status, diff))
    for key, output in old.items():
        if key not in new:
            item = as_item(key, output, dump_old)
            diff = unified_diff(key, item.text, "")
            changes.append(ObjectChange(key, item.kind, item.name, item.namespace, item.file, Status.REMOVED, diff))
    return tuple(changes)

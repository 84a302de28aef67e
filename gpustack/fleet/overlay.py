"""A cluster's overlay merged into the base blueprint, with where each merged value was written.

Mappings merge key by key; lists whose items are all mappings with a `name` (pools, tenants, workloads, groups) merge
by name, base order kept and new names added at the end, so every base item keeps its index (and the base's
positions stay right for it); any other value replaces the base's, and null removes the key. `Origins` maps a path of
the merged blueprint to the document and path its value came from, for every value the overlay wrote: a diagnostic
at such a path is moved to the overlay's line, the base's line kept beside it.
"""

from __future__ import annotations

import copy
from typing import Any

from gpustack.diagnostic import JsonPath
from gpustack.load import Document

Origins = dict[JsonPath, tuple[Document, JsonPath]]


def merge_overlay(base: Any, overlay: Any, document: Document, at: JsonPath) -> tuple[Any, Origins]:
    """The base with the overlay (found in `document` at path `at`) merged in, and the origins of what it wrote."""
    origins: Origins = {}
    merged = _merge(copy.deepcopy(base), overlay, (), at, document, origins)
    return merged, origins


def _named(items: Any) -> bool:
    return isinstance(items, list) and all(
        isinstance(item, dict) and isinstance(item.get("name"), str) for item in items
    )


def _merge(base: Any, overlay: Any, path: JsonPath, at: JsonPath, document: Document, origins: Origins) -> Any:
    if isinstance(base, dict) and isinstance(overlay, dict):
        for key, value in overlay.items():
            if value is None:
                base.pop(key, None)
            elif key in base:
                base[key] = _merge(base[key], value, (*path, key), (*at, key), document, origins)
            else:
                base[key] = copy.deepcopy(value)
                origins[(*path, key)] = (document, (*at, key))
        return base
    if _named(base) and _named(overlay) and overlay:
        index = {item["name"]: position for position, item in enumerate(base)}
        for position, item in enumerate(overlay):
            where = (*at, position)
            if item["name"] in index:
                slot = index[item["name"]]
                base[slot] = _merge(base[slot], item, (*path, slot), where, document, origins)
            else:
                index[item["name"]] = len(base)
                origins[(*path, len(base))] = (document, where)
                base.append(copy.deepcopy(item))
        return base
    origins[path] = (document, at)
    return copy.deepcopy(overlay)

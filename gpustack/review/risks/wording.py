"""How risk messages name things: counts, quoted names, sorted subjects."""

from __future__ import annotations

from collections.abc import Iterable


def sorted_names(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(items)))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def quoted(names: Iterable[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


def pool_list(names: list[str]) -> str:
    return f"pool {quoted(names)}" if len(names) == 1 else f"pools {quoted(names)}"

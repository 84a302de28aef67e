"""The one record a diagnostic code is written as, and the registry every view of the codes reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    """A diagnostic code: its id, the stage and modules that raise it, a one-line summary, what triggers it, the fix."""

    id: str
    stage: str
    where: str
    summary: str
    trigger: str
    fix: str


REGISTRY: dict[str, Code] = {}


@dataclass(frozen=True)
class Stage:
    """Where a group of codes is raised; calling it registers one code there and gives back its plain id.

    The constant a raise site uses stays a plain `str` (what every Diagnostic carries), so one call per code writes
    the id, summary, trigger and fix together, as mypy's `ErrorCode` does.
    """

    name: str
    where: str

    def __call__(self, id: str, summary: str, trigger: str, fix: str) -> str:
        if id in REGISTRY:
            raise ValueError(f"diagnostic code {id} is registered twice")
        REGISTRY[id] = Code(id, self.name, self.where, summary, trigger, fix)
        return id

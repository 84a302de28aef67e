"""Every diagnostic code gpustack emits, each written once as a `Code` record (the reference users search for).

A code's constant (what raise sites and tests use), its stage, summary (text and SARIF reports), what triggers it and
how to fix it (docs/codes/GSnnn.md by scripts/code_docs.py, SARIF help) are one `Stage(...)` call in `reading`,
`pools`, `tenants` or `outputs`; `CODES` and `EXPLANATIONS` are views of the one registry.
"""

from __future__ import annotations

from gpustack.codes.outputs import *  # noqa: F403  (the constants are the package's interface)
from gpustack.codes.pools import *  # noqa: F403
from gpustack.codes.reading import *  # noqa: F403
from gpustack.codes.record import REGISTRY
from gpustack.codes.record import Code as Code
from gpustack.codes.tenants import *  # noqa: F403

CODES: dict[str, str] = {code.id: code.summary for code in sorted(REGISTRY.values(), key=lambda code: code.id)}
# Per code: what triggers it and how to fix it, for docs/codes/GSnnn.md (scripts/code_docs.py) and SARIF help.
EXPLANATIONS: dict[str, tuple[str, str]] = {code: (REGISTRY[code].trigger, REGISTRY[code].fix) for code in CODES}

DOCS_FOLDER = "docs/codes"


def docs_page(code: str) -> str:
    """The page that explains a code, relative to the repository root (docs/codes/GS303.md)."""
    return f"{DOCS_FOLDER}/{code}.md"

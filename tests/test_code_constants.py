"""Diagnostic codes are named constants (gpustack/codes.py): raise sites use the name, never the bare "GSnnn"."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import gpustack.codes as codes

PACKAGE = Path(codes.__file__).parent
BARE_CODE = re.compile(r"""^['"]GS\d{3}['"]$""")


def test_every_code_has_exactly_one_constant() -> None:
    constants = {
        name: value
        for name, value in vars(codes).items()
        if name.isupper() and isinstance(value, str) and BARE_CODE.match(repr(value))
    }
    by_value = sorted(constants.values())
    assert sorted(codes.CODES) == by_value, "each code in CODES is one constant, and each constant is in CODES"
    assert set(codes.EXPLANATIONS) == set(codes.CODES)


def test_no_module_spells_a_code_as_a_bare_string() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == Path(codes.__file__):
            continue
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        found += [f"{path.relative_to(PACKAGE)}:{t.start[0]}" for t in tokens if BARE_CODE.match(t.string)]
    assert not found, f"use the constant from gpustack.codes: {found}"

"""Diagnostic codes are named constants (gpustack/codes/): raise sites use the name, never the bare "GSnnn"."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

import gpustack.codes as codes

PACKAGE = Path(codes.__file__).parent.parent
CODES_PACKAGE = Path(codes.__file__).parent
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
        if path.parent == CODES_PACKAGE:  # the one place a code's id is written
            continue
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        found += [f"{path.relative_to(PACKAGE)}:{t.start[0]}" for t in tokens if BARE_CODE.match(t.string)]
    assert not found, f"use the constant from gpustack.codes: {found}"


def test_each_code_names_where_it_is_raised() -> None:
    """A code's record names the modules that raise it (its docs page prints them): each exists, and one of them, or
    a module in a named folder, uses the code's constant."""
    constant_of = {
        value: name
        for name, value in vars(codes).items()
        if name.isupper() and isinstance(value, str) and value in codes.CODES
    }
    repo = PACKAGE.parent
    for record in codes.REGISTRY.values():
        places = [repo / part.strip() for part in record.where.split(",")]
        assert all(place.exists() for place in places), f"{record.id}: {record.where}"
        sources = [p for place in places for p in ([place] if place.is_file() else sorted(place.rglob("*.py")))]
        texts = [path.read_text(encoding="utf-8") for path in sources if path.suffix == ".py"]
        name = constant_of[record.id]
        assert any(re.search(rf"\b{name}\b", text) for text in texts), f"{record.id} ({name}) not in {record.where}"


def test_a_code_registered_twice_is_refused() -> None:
    from gpustack.codes.record import Stage

    with pytest.raises(ValueError, match="GS001 is registered twice"):
        Stage("loading the YAML", "gpustack/load.py")("GS001", "again", "again", "again")

"""Kubernetes resource quantities ("500m", "24Gi", "1e3") as exact numbers."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import overload

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(
    r"^\+?(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<suffix>[eE][-+]?[0-9]+|m|k|M|G|T|P|E|[KMGTPE]i)?$"
)

GIB = Decimal(2) ** 30
MIB = Decimal(2) ** 20


MAX_EXPONENT = 30
MAX_QUANTITY = Decimal(2) ** 63 * Decimal(1000)  # int64 milli-units, with room: anything past is no real size


def parse_quantity(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores, bytes); ValueError if it is not a quantity."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"not a finite quantity: {value!r}")
        parsed = Decimal(str(value))
        if parsed.is_finite() and abs(parsed) >= MAX_QUANTITY:
            raise ValueError(f"quantity too large: {value!r}")
        return parsed
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    suffix = match["suffix"] or ""
    try:
        number = Decimal(match["number"])
        if suffix[:1] in ("e", "E"):
            exponent = int(suffix[1:])
            # Kubernetes' Quantity holds at most 63 bits: an exponent past this can only be a mistake, and
            # Decimal would overflow (or work for minutes) computing it.
            if abs(exponent) > MAX_EXPONENT:
                raise ValueError(f"quantity out of range: {value!r}")
            result = number * Decimal(10) ** exponent
        else:
            result = number * _SUFFIXES[suffix]
    except (InvalidOperation, ArithmeticError) as error:
        raise ValueError(f"not a Kubernetes quantity: {value!r}") from error
    if abs(result) >= MAX_QUANTITY:
        raise ValueError(f"quantity too large: {value!r}")
    return result


def format_gib(amount: Decimal) -> str:
    """Bytes as GiB, trimmed: 25769803776 -> '24 GiB'."""
    gib = (amount / GIB).quantize(Decimal("0.01")).normalize()
    return f"{gib:f} GiB"


@overload
def json_number(value: Decimal | float, places: str | None = None) -> int | float: ...


@overload
def json_number(value: None, places: str | None = None) -> None: ...


def json_number(value: Decimal | float | None, places: str | None = None) -> int | float | None:
    """A number for a JSON or YAML document: an int when whole (1.0 is written 1), else a float; rounded to
    `places` ("0.01") when given.

    JSON has no decimal type, and `1.0` where a reader expects `1` makes needless diffs between runs of a report.
    """
    if value is None:
        return None
    exact = Decimal(str(value)) if isinstance(value, float) else value
    if places is not None:
        exact = exact.quantize(Decimal(places)).normalize()
    return int(exact) if exact == exact.to_integral_value() else float(exact)

"""Kubernetes resource quantities ("500m", "24Gi", "1e3") as exact numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

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


def parse_quantity(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores, bytes); ValueError if it is not a quantity."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    suffix = match["suffix"] or ""
    try:
        number = Decimal(match["number"])
        if suffix[:1] in ("e", "E"):
            return number * Decimal(10) ** int(suffix[1:])
        return number * _SUFFIXES[suffix]
    except InvalidOperation as error:
        raise ValueError(f"not a Kubernetes quantity: {value!r}") from error


def format_gib(amount: Decimal) -> str:
    """Bytes as GiB, trimmed: 25769803776 -> '24 GiB'."""
    gib = (amount / GIB).quantize(Decimal("0.01")).normalize()
    return f"{gib:f} GiB"

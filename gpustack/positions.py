"""Where each key and value of a loaded blueprint starts and ends, kept as one int per path.

A large blueprint has hundreds of thousands of located values and few are ever looked up. The parser's Mark
objects cost several times more to keep, and finding ends by parsing again on the first diagnostic cost as much as
the load, so the reader packs each span into an int: the 0-based line and column where it starts and where it
ends, `BITS` bits each, in that order from the high bits down. `pack`, `pack_to_end_of`, `start_of` and `end_of`
are the only code that knows the layout (tests/test_front_door.py round-trips it); `PackedPositions` shows a map of
packed ints as the `Mapping[JsonPath, Position]` a `Document` offers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from gpustack.diagnostic import JsonPath, Position

Mark = Any  # yaml.error.Mark, or the libyaml parser's own Mark: both have 0-based .line and .column

BITS: Final = 32  # 4 billion lines or columns: more than the 8 MiB a blueprint may have
_FIELD: Final = (1 << BITS) - 1
_END: Final = (1 << 2 * BITS) - 1  # the end's line and column


def pack(start: Mark, end: Mark) -> int:
    """The span from `start` to `end` (parser marks) as one int."""
    return (((start.line << BITS | start.column) << BITS | end.line) << BITS) | end.column


def pack_to_end_of(start: Mark, last: int) -> int:
    """The span from `start` to where the packed span `last` ends: a block collection ends with its last value."""
    return (start.line << BITS | start.column) << 2 * BITS | last & _END


def start_of(packed: int) -> Position:
    """Where a packed span starts, 1-based."""
    return Position((packed >> 3 * BITS) + 1, (packed >> 2 * BITS & _FIELD) + 1)


def end_of(packed: int) -> Position:
    """Where a packed span ends (just after its last character, as editors and SARIF count), 1-based."""
    return Position((packed >> BITS & _FIELD) + 1, (packed & _FIELD) + 1)


PackedMarks = Mapping[JsonPath, int]


class PackedPositions(Mapping[JsonPath, Position]):
    """Packed spans made into Positions when asked for: where each value or key starts, or with ends=True where it
    ends. The spans are a map, or a function that finds them the first time one is asked for."""

    def __init__(self, marks: PackedMarks | Callable[[], PackedMarks], *, ends: bool = False) -> None:
        self._source = marks
        self._unpack = end_of if ends else start_of

    @property
    def _marks(self) -> PackedMarks:
        source = self._source
        return source() if callable(source) else source

    def ends(self) -> PackedPositions:
        return PackedPositions(self._source, ends=True)

    def __getitem__(self, path: JsonPath) -> Position:
        return self._unpack(self._marks[path])

    def __iter__(self) -> Iterator[JsonPath]:
        return iter(self._marks)

    def __len__(self) -> int:
        return len(self._marks)

    def __contains__(self, path: object) -> bool:
        return path in self._marks


def end_positions(starts: Mapping[JsonPath, Position]) -> Mapping[JsonPath, Position]:
    """Where each located value (or key) of `starts` ends; none for positions made by hand, which have no ends."""
    return starts.ends() if isinstance(starts, PackedPositions) else {}

"""The capacity chart: what each pool gives and each tenant may take, against what the templates ask.

Laid out here, drawn by templates/capacity-chart.svg.j2. Every row reads the same way: bars are a
percentage of what the row *allows* (a pool: the units it advertises; a tenant: its quota, with what
it may borrow), so one axis serves all rows, the dashed 100% line is "allowed", and the number
at the right is "asked / allowed". Text is measured with DejaVu Sans advance widths (the font the SVG
asks for first, and wider than most sans-serif fallbacks) so labels never run into the bars.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpustack.templating import package_template

FONT_FAMILY = "DejaVu Sans, Verdana, sans-serif"
FONT_SIZE = 12
TITLE_SIZE = 16
# DejaVu Sans advance widths in thousandths of an em, for ' ' (32) to '~' (126).
_WIDTHS = (
    *(318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636),
    *(636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775),
    *(752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390),
    *(337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612),
    *(635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838),
)
_BOLD = 1.11  # DejaVu Sans Bold is at most this much wider, glyph by glyph
_WIDE = 1000  # anything outside ASCII: as wide as the widest glyph

MARGIN = 10
GAP = 14  # between a label and the bars, and between the bars and the numbers
BAR_AREA = 400
ROW = 30
ALLOWED_BAR = 12
ASKED_BAR = 8
_STEPS = (25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 100_000, 1_000_000)
LEGEND = (
    ("pool", "a pool's units (= 100%)"),
    ("tenant", "a tenant's quota (= 100%)"),
    ("asked", "templates ask"),
    ("over", "templates ask more than allowed"),
)
NUMBERS_HEADER = "asked / allowed"
AXIS_TITLE = "% of what the row allows"
Text = dict[str, Any]
Shape = dict[str, Any]
COLOURS = {"pool": "#9db8d9", "tenant": "#f2c14e", "asked": "#4c7a34", "over": "#c0392b"}


def text_width(text: str, size: float = FONT_SIZE, bold: bool = False) -> float:
    """How wide `text` is drawn, in pixels: an upper bound for DejaVu Sans."""
    thousandths = sum(_WIDTHS[ord(c) - 32] if 32 <= ord(c) < 127 else _WIDE for c in text)
    # 2% and a pixel over the table: its widths are rounded, and renderers round each glyph's position too.
    return thousandths * size / 1000 * (_BOLD if bold else 1.0) * 1.02 + 1


@dataclass(frozen=True)
class Row:
    label: str
    kind: str  # pool or tenant
    allowed: int  # pool: units it advertises; tenant: quota (with borrowing), or the pool's units without one
    asked: int  # what the workload templates request

    @property
    def over(self) -> bool:
        return self.asked > self.allowed


def chart_rows(data: dict[str, Any]) -> list[Row]:
    rows = [
        Row(f"{pool['name']}: {unit['resource']}", "pool", unit["total"], unit["demand"])
        for pool in data["pools"]
        for unit in pool["units"]
    ]
    for tenant in data["tenants"]:
        for grant in tenant["grants"]:
            limit = grant["withBorrowing"] if grant["withBorrowing"] is not None else grant["quota"]
            allowed = limit if limit is not None else grant["capacity"]
            rows.append(
                Row(f"{tenant['name']} on {grant['pool']}: {grant['resource']}", "tenant", allowed, grant["demand"])
            )
    return rows


def _percent(value: int, allowed: int) -> float:
    if allowed == 0:
        return 0.0 if value == 0 else math.inf
    return 100 * value / allowed


def _text(x: float, y: float, text: str, size: int = FONT_SIZE, bold: bool = False, anchor: str = "start") -> Text:
    return {"x": x, "y": y, "text": text, "size": size, "bold": bold, "anchor": anchor}


def _rect(x: float, y: float, width: float, height: float, fill: str) -> Shape:
    return {"x": x, "y": y, "width": width, "height": height, "fill": fill}


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str = "#ddd", dash: str | None = None) -> Shape:
    return {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "stroke": stroke, "dash": dash}


def layout(data: dict[str, Any]) -> dict[str, Any]:
    """Every shape and text of the chart with its position: the template only draws them."""
    rows = chart_rows(data)
    title = f"Capacity of {data['blueprint']}"
    numbers = [f"{r.asked} / {r.allowed}" for r in rows]
    bars = math.ceil(MARGIN + max((text_width(r.label) for r in rows), default=0.0) + GAP)
    numbers_x = bars + BAR_AREA + GAP
    finite = [p for r in rows for p in (_percent(r.asked, r.allowed), 100.0) if math.isfinite(p)]
    top = max(100, math.ceil(max(finite, default=100) / 50) * 50)
    scale = BAR_AREA / top

    def bar(percent: float) -> float:
        return round(min(percent, top) * scale, 1)

    texts: list[Text] = [_text(MARGIN, 24, title, TITLE_SIZE, bold=True)]
    shapes: list[Shape] = []
    lines: list[Shape] = []
    x, legend_y = MARGIN, 44
    for key, words in LEGEND:
        shapes.append(_rect(x, legend_y - 10, 12, 10, COLOURS[key]))
        texts.append(_text(x + 16, legend_y, words))
        x += 16 + math.ceil(text_width(words)) + GAP
    header_y = legend_y + 26
    texts.append(_text(numbers_x, header_y, NUMBERS_HEADER))
    first = header_y + 10
    for index, (row, number) in enumerate(zip(rows, numbers, strict=True)):
        y = first + index * ROW
        texts += [_text(MARGIN, y + 15, row.label), _text(numbers_x, y + 15, number)]
        colour = COLOURS["over" if row.over else "asked"]
        shapes.append(_rect(bars, y + 2, bar(100.0 if row.allowed else 0.0), ALLOWED_BAR, COLOURS[row.kind]))
        shapes.append(_rect(bars, y + 4 + ALLOWED_BAR, bar(_percent(row.asked, row.allowed)), ASKED_BAR, colour))
    axis_y = first + len(rows) * ROW + 4
    lines.append(_line(bars, axis_y, bars + BAR_AREA, axis_y, "#333"))
    # Labelled ticks far enough apart for their text; the dashed 100% line ("allowed") always.
    step = next(s for s in _STEPS if s * scale >= text_width(f"{top}%") + GAP)
    for percent in sorted({*range(0, top + 1, step), 100}):
        tick = bars + round(percent * scale, 1)
        allowed = percent == 100
        lines.append(
            _line(tick, first - 4, tick, axis_y + 4, "#333" if allowed else "#ddd", "4 3" if allowed else None)
        )
        if percent % step == 0:
            texts.append(_text(tick, axis_y + 18, f"{percent}%", anchor="middle"))
    texts.append(_text(bars + BAR_AREA / 2, axis_y + 36, AXIS_TITLE, anchor="middle"))
    widest = max([text_width(NUMBERS_HEADER), *(text_width(n) for n in numbers)])
    width = max(numbers_x + widest, x, MARGIN + text_width(title, TITLE_SIZE, bold=True)) + MARGIN
    return {
        "title": data["blueprint"],
        "width": math.ceil(width),
        "height": axis_y + 48,
        "font": FONT_FAMILY,
        "texts": texts,
        "rects": shapes,
        "lines": lines,
    }


def render_chart(data: dict[str, Any]) -> str:
    """A deterministic SVG of the capacity report's data."""
    return package_template("capacity-chart.svg.j2").render(chart=layout(data))

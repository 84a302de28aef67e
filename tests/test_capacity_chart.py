"""The capacity chart by geometry: text measured with the real font never overlaps a bar, a line or other text."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import BLUEPRINTS, shipped_examples

from gpustack.capacity import capacity_data, measure_capacity
from gpustack.capacity_chart import chart_rows, render_chart, text_width
from gpustack.catalog import load_catalog
from gpustack.context import Context, unplaced
from gpustack.validation import validate_path

ImageFont = pytest.importorskip("PIL.ImageFont", reason="Pillow is not installed: pip install -e '.[test]'")
FONT_FOLDERS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/share/fonts/TTF")
SVG = "{http://www.w3.org/2000/svg}"
Box = tuple[float, float, float, float]  # left, top, right, bottom


@cache
def font_file(bold: bool) -> str:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for folder in FONT_FOLDERS:
        if (Path(folder) / name).is_file():
            return str(Path(folder) / name)
    pytest.skip(
        "the DejaVu Sans font is not installed (on Debian or Ubuntu: apt-get install fonts-dejavu-core); "
        "the chart's text is measured with the font it names first"
    )


def data_of(blueprint: Path) -> dict[str, Any]:
    result = validate_path(blueprint)
    assert result.blueprint is not None
    return capacity_data(measure_capacity(Context(result.blueprint, load_catalog(), unplaced)), blueprint.name)


def long_names() -> dict[str, Any]:
    """Names at their longest (63 characters) and a tenant that asks 30 times its quota."""
    pool, tenant = "p" * 40 + "-wide-WWWWWWWWWWWWWWWWWWWWW", "t" * 50 + "-MMMMMMMMMMMM"
    unit = {"resource": "nvidia.com/mig-1g.10gb+me", "total": 56, "demand": 3}
    grant = {"pool": pool, "resource": "nvidia.com/mig-1g.10gb+me", "quota": 1, "withBorrowing": None}
    return {
        "blueprint": "a-blueprint-name-of-some-length",
        "pools": [{"name": pool, "units": [unit]}],
        "tenants": [{"name": tenant, "grants": [{**grant, "capacity": 56, "demand": 30}]}],
    }


def boxes(svg: str) -> tuple[list[tuple[str, Box]], list[Box], Box]:
    root = ET.fromstring(svg)
    size = float(root.get("font-size", "12"))
    texts: list[tuple[str, Box]] = []
    for node in root.iter(f"{SVG}text"):
        text, x, y = node.text or "", float(node.get("x", 0)), float(node.get("y", 0))
        font = ImageFont.truetype(font_file(node.get("font-weight") == "bold"), float(node.get("font-size", size)))
        width = font.getlength(text)
        ascent, descent = font.getmetrics()
        left = x - width / 2 if node.get("text-anchor") == "middle" else x
        texts.append((text, (left, y - ascent, left + width, y + descent)))
    shapes = [
        (
            float(r.get("x", 0)),
            float(r.get("y", 0)),
            float(r.get("x", 0)) + float(r.get("width", 0)),
            float(r.get("y", 0)) + float(r.get("height", 0)),
        )
        for r in root.iter(f"{SVG}rect")
    ]
    shapes += [
        (
            min(float(n.get(a, 0)) for a in ("x1", "x2")),
            min(float(n.get(a, 0)) for a in ("y1", "y2")),
            max(float(n.get(a, 0)) for a in ("x1", "x2")),
            max(float(n.get(a, 0)) for a in ("y1", "y2")),
        )
        for n in root.iter(f"{SVG}line")
    ]
    view = tuple(float(v) for v in (root.get("viewBox") or "").split())
    return texts, shapes, (view[0], view[1], view[0] + view[2], view[1] + view[3])


def overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


CHARTS = [*shipped_examples(), "long names"]


@pytest.mark.parametrize("blueprint", CHARTS, ids=lambda b: b if isinstance(b, str) else b.stem)
def test_no_text_overlaps_a_bar_a_line_or_other_text(blueprint: Path | str) -> None:
    data = long_names() if isinstance(blueprint, str) else data_of(blueprint)
    texts, shapes, view = boxes(render_chart(data))
    assert len(texts) > 5
    for text, box in texts:
        assert view[0] <= box[0] and box[2] <= view[2] and view[1] <= box[1] and box[3] <= view[3], text
        hit = [shape for shape in shapes if overlap(box, shape)]
        assert hit == [], f"{text!r} at {box} overlaps {hit}"
    for (first, a), (second, b) in itertools.combinations(texts, 2):
        assert not overlap(a, b), f"{first!r} overlaps {second!r}"


def test_the_layout_never_underestimates_the_font() -> None:
    font = ImageFont.truetype(font_file(False), 12)
    for text in ("WWWWMMMM", "nvidia.com/mig-3g.40gb", "search on a100-inference: nvidia.com/gpu", "ñandú"):
        assert text_width(text) >= font.getlength(text)


def test_an_axis_a_legend_and_one_meaning_for_n_of_m() -> None:
    data = data_of(BLUEPRINTS / "seed-article.yaml")
    svg = render_chart(data)
    texts = [t for t, _ in boxes(svg)[0]]
    assert {"0%", "50%", "100%", "% of what the row allows"} <= set(texts), "an axis with ticks and its unit"
    assert "a pool's units (= 100%)" in texts and "a tenant's quota (= 100%)" in texts and "templates ask" in texts
    assert "asked / allowed" in texts
    for row in chart_rows(data):  # pool and tenant rows: templates ask N of the M the row allows
        assert f"{row.asked} / {row.allowed}" in texts
    assert 'stroke-dasharray="4 3"' in svg, "the 100% line: what the row allows"


def test_asking_more_than_allowed_is_red_and_within_the_axis() -> None:
    svg = render_chart(long_names())
    root = ET.fromstring(svg)
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "#c0392b" and float(r.get("y", 0)) > 50]
    assert len(bars) == 1, "the tenant asks 30 of its quota of 1"
    ticks = [
        t.text for t in root.iter(f"{SVG}text") if (t.text or "").endswith("%") and t.text != "% of what the row allows"
    ]
    assert ticks[-1] == "3000%"

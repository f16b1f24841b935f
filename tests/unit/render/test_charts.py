"""`testbed.render.charts`: charts with real axes (ticks, tick labels, axis title), full
labels that fit inside the SVG, escaped text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from testbed.render import palette
from testbed.render.charts import (
    CHAR_W,
    Bar,
    Point,
    Span,
    bar_chart,
    duration_ticks,
    interval_chart,
    nice_ticks,
    range_chart,
)

NS = {"s": "http://www.w3.org/2000/svg"}


def _texts(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ET.fromstring(svg).iterfind(".//s:text", NS)]


def _ticks(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ET.fromstring(svg).iterfind(".//s:text[@class='tick']", NS)]


def _fits(svg: str) -> None:
    """Every text's estimated extent lies inside the SVG's width."""
    root = ET.fromstring(svg)
    width = float(root.get("width") or 0)
    for t in root.iterfind(".//s:text", NS):
        x, text = float(t.get("x") or 0), "".join(t.itertext())
        extent = len(text) * CHAR_W
        anchor = t.get("text-anchor", "start")
        left, right = {"start": (x, x + extent), "end": (x - extent, x),
                       "middle": (x - extent / 2, x + extent / 2)}[anchor]  # fmt: skip
        assert left >= 0 and right <= width, (text, left, right, width)


def test_nice_and_duration_ticks() -> None:
    assert nice_ticks(1.0) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(37) == [0, 10, 20, 30, 40]
    assert nice_ticks(0.013) == [0, 0.005, 0.01, 0.015]
    assert nice_ticks(0) == [0.0, 1.0]
    assert duration_ticks(50) == [0, 10, 20, 30, 40, 50]
    assert duration_ticks(1250) == [0, 300, 600, 900, 1200, 1500]
    assert duration_ticks(0.4) == [0, 1]


def test_bar_chart_has_an_axis_and_whole_labels() -> None:
    long = "a-rather-long-task-category-name-that-used-to-be-clipped"
    svg = str(
        bar_chart(
            "Pass rate <by> category",
            [Bar(long, 0.625, "62.5% of 8", palette.OUTCOME["passed"]), Bar("web", 1.0, "100.0% of 2")],
            "pass rate",
            scale=1.0,
        )
    )
    texts = _texts(svg)
    assert long in texts and "62.5% of 8" in texts and "pass rate" in texts  # nothing cut
    assert _ticks(svg) == ["0%", "20%", "40%", "60%", "80%", "100%"]
    assert "Pass rate &lt;by&gt; category" in svg
    _fits(svg)
    counts = bar_chart("Findings", [Bar("x", 37, "37"), Bar("y", 3, "3")], "findings")
    assert _ticks(str(counts)) == ["0", "10", "20", "30", "40"]


def test_interval_chart_draws_whiskers_under_group_headings() -> None:
    points = [
        Point("openai:gpt-4.1-mini", 0.857, 0.487, 0.974, "85.7% [48.7, 97.4] n=7", group="services"),
        Point("oracle", 1.0, 0.646, 1.0, "100.0% n=7", group="services", color=palette.OUTCOME["passed"]),
        Point("openai:qwen2.5-coder-7b", None, None, None, "no decided run", group="storage"),
    ]
    svg = str(interval_chart("Pass rate by agent", points, "pass rate (Wilson 95 % interval)"))
    texts = _texts(svg)
    assert texts.index("services") < texts.index("oracle") < texts.index("storage")
    assert svg.count('class="point"') == 2  # no dot without a value
    root = ET.fromstring(svg)
    plot_x = float(next(t for t in root.iterfind(".//s:text[@class='tick']", NS)).get("x") or 0)
    dot = next(c for c in root.iterfind(".//s:circle", NS))
    assert float(dot.get("cx") or 0) == pytest.approx(plot_x + 0.857 * 380, abs=0.1)
    _fits(svg)


def test_range_chart_and_empty_charts() -> None:
    svg = str(range_chart("Agent time", [Span("web", 10, 20, 300, "median 20.0 s")], "agent phase"))
    assert _ticks(svg) == ["0s", "1m", "2m", "3m", "4m", "5m"] and palette.OUTCOME["failed"] in svg
    _fits(svg)
    for empty in (bar_chart("x", [], "a"), interval_chart("x", [], "a"), range_chart("x", [], "a")):
        assert "no data" in str(empty) and ET.fromstring(str(empty)) is not None
    assert not re.search(r"…", svg)

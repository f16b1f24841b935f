"""`testbed.render.svg` and `palette`: one colour per outcome on every chart, well-formed
SVG, escaped labels."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from testbed.db.read.rates import OutcomeCounts
from testbed.render import palette
from testbed.render.charts import Bar, bar_chart
from testbed.render.svg import outcome_bar, progress, rate_bars, ring, timeline


@dataclass
class Phase:
    name: str
    status: str
    start_s: float
    duration_s: float | None
    detail: str | None = None


def _counts(key: str = "web", **outcomes: int) -> OutcomeCounts:
    counts = OutcomeCounts(key)
    for outcome, n in outcomes.items():
        counts.add(None if outcome == "unfinished" else outcome, n)
    return counts


def _fills(svg: str) -> list[str]:
    return re.findall(r'fill="(#[0-9a-f]{6})"', svg)


def test_palette_is_keyed_by_outcome() -> None:
    assert set(palette.OUTCOME) == {"passed", "failed", "error", "cancelled", "unfinished"}
    assert palette.PHASE["ok"] == palette.OUTCOME["passed"]
    assert palette.PHASE["running"] == palette.OUTCOME["unfinished"]
    assert palette.RESIDUE_VERDICT["yes"] == palette.OUTCOME["failed"]


def test_outcome_bar_stacks_each_outcome_in_its_colour() -> None:
    svg = str(outcome_bar(_counts(passed=3, failed=1, error=1, cancelled=1, unfinished=2)))
    ET.fromstring(svg)
    assert _fills(svg) == [palette.TRACK, *(palette.OUTCOME[o] for o in ("passed", "failed", "error", "cancelled",
                                                                         "unfinished"))]  # fmt: skip
    assert "<title>passed: 3</title>" in svg and str(progress(_counts())).count("<rect") == 1


def test_dashboard_and_report_agree_on_colours() -> None:
    dashboard = set(_fills(str(rate_bars([_counts(passed=1, failed=1)]))))
    report = set(_fills(str(bar_chart("t", [Bar("passed", 1, "1", palette.OUTCOME["passed"]),
                                            Bar("failed", 1, "1", palette.OUTCOME["failed"])], "runs"))))  # fmt: skip
    assert {palette.OUTCOME["passed"], palette.OUTCOME["failed"]} <= dashboard & report


def test_labels_are_escaped_and_clipped() -> None:
    svg = str(rate_bars([_counts("<script>&" + "x" * 40, passed=1)]))
    ET.fromstring(svg)
    assert "<script>" not in svg and "&lt;script&gt;&amp;" in svg and "…" in svg


def test_ring_and_timeline() -> None:
    assert "50%" in str(ring(0.5)) and "\u2013" in str(ring(None))
    svg = str(timeline([Phase("agent", "ok", 0, 90.0), Phase("verify", "running", 95, None, "R1 <x>")], now_s=120))
    ET.fromstring(svg)
    assert palette.PHASE["ok"] in svg and palette.PHASE["running"] in svg and "1.5m" in svg and "R1 &lt;x&gt;" in svg
    assert "No phases" in str(timeline([]))

"""Inline SVG charts for the HTML report: no scripts, no external resources, so the report
works offline and can be mailed as one file.

Contract: every function returns one `<svg>` element as `markupsafe.Markup`; labels and
titles are XML-escaped; an empty input gives a small "no data" SVG.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

LABEL_W = 200
BAR_W = 360
VALUE_W = 110
ROW_H = 24
PAD = 8
COLORS = {"bar": "#4c78a8", "bad": "#e45756", "ok": "#54a24b", "warn": "#eeca3b", "muted": "#bab0ac"}


@dataclass(frozen=True)
class Bar:
    """One bar: `value` in [0, scale]; `text` printed beside it."""

    label: str
    value: float
    text: str
    color: str = COLORS["bar"]


def _empty(title: str) -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_W + BAR_W}" height="30" role="img">'
        f"<title>{escape(title)}</title>"
        f'<text x="0" y="20" font-size="13" fill="#666">no data</text></svg>'
    )


def bar_chart(title: str, bars: Sequence[Bar], scale: float | None = None) -> Markup:
    """Horizontal bars, one row per `Bar`, scaled to `scale` (default: the largest value)."""
    if not bars:
        return _empty(title)
    top = scale if scale is not None else max((b.value for b in bars), default=0.0)
    top = top or 1.0
    width = LABEL_W + BAR_W + VALUE_W
    height = PAD * 2 + ROW_H * len(bars)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
    ]
    for i, b in enumerate(bars):
        y = PAD + i * ROW_H
        w = max(0.0, min(1.0, b.value / top)) * BAR_W
        parts.append(
            f'<text x="{LABEL_W - 6}" y="{y + 16}" text-anchor="end">{escape(_clip(b.label))}</text>'
            f'<rect x="{LABEL_W}" y="{y + 4}" width="{BAR_W}" height="{ROW_H - 8}" fill="#f0f0f0"/>'
            f'<rect x="{LABEL_W}" y="{y + 4}" width="{w:.1f}" height="{ROW_H - 8}" fill="{b.color}">'
            f"<title>{escape(b.label)}: {escape(b.text)}</title></rect>"
            f'<text x="{LABEL_W + BAR_W + 6}" y="{y + 16}">{escape(b.text)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


@dataclass(frozen=True)
class Span:
    """One range row: min, median and max."""

    label: str
    low: float
    mid: float
    high: float
    text: str


def range_chart(title: str, spans: Sequence[Span]) -> Markup:
    """A min-max line with a median dot per row, on a common axis from 0 to the largest max."""
    if not spans:
        return _empty(title)
    top = max(s.high for s in spans) or 1.0
    width = LABEL_W + BAR_W + VALUE_W + 40
    height = PAD * 2 + ROW_H * len(spans) + 18

    def x(v: float) -> float:
        return LABEL_W + max(0.0, v) / top * BAR_W

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
    ]
    for i, s in enumerate(spans):
        y = PAD + i * ROW_H + ROW_H / 2
        parts.append(
            f'<text x="{LABEL_W - 6}" y="{y + 4}" text-anchor="end">{escape(_clip(s.label))}</text>'
            f'<line x1="{x(s.low):.1f}" y1="{y}" x2="{x(s.high):.1f}" y2="{y}" stroke="{COLORS["bar"]}" '
            f'stroke-width="4" stroke-linecap="round"/>'
            f'<circle cx="{x(s.mid):.1f}" cy="{y}" r="5" fill="{COLORS["bad"]}">'
            f"<title>{escape(s.label)}: {escape(s.text)}</title></circle>"
            f'<text x="{LABEL_W + BAR_W + 10}" y="{y + 4}">{escape(s.text)}</text>'
        )
    axis_y = PAD + ROW_H * len(spans) + 4
    parts.append(
        f'<line x1="{LABEL_W}" y1="{axis_y}" x2="{LABEL_W + BAR_W}" y2="{axis_y}" stroke="#999"/>'
        f'<text x="{LABEL_W}" y="{axis_y + 14}" fill="#666">0</text>'
        f'<text x="{LABEL_W + BAR_W}" y="{axis_y + 14}" text-anchor="end" fill="#666">{escape(_seconds(top))}</text>'
    )
    parts.append("</svg>")
    return Markup("".join(parts))


def _clip(text: str, n: int = 26) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.0f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"

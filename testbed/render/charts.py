"""Charts with real axes for the report and the dashboard's leaderboard: horizontal bars,
dots with confidence intervals, and min-median-max ranges, as self-contained SVG.

Contracts:

- Every chart is one `<svg>` (`markupsafe.Markup`) with a `<title>`, a value axis (a line,
  tick marks at "nice" values — 1, 2 or 5 times a power of ten — with tick labels, light
  grid lines) and an axis title, and one row per item with its full label: no label or
  value text is cut. The left margin is sized to the longest label and the right margin to
  the longest value text (an estimate of `CHAR_W` px per 12 px character), so nothing is
  clipped at the SVG's edge. Every text is XML-escaped; colours come from `palette`.
- `bar_chart(title, bars, axis, scale=None, ticks=fmt)` draws bars from 0; `scale` fixes
  the axis end (a share: 1.0), else it is the largest value rounded up to a nice tick.
- `interval_chart(title, points, axis)` draws each `Point` as a dot at its value with a
  whisker from `low` to `high` on a [0, 1] axis in percent; points with a `group` are
  listed under a group heading, in the order given.
- `range_chart(title, spans, axis)` draws min-max lines with a median dot on a duration
  axis from 0 (`duration_ticks`: steps of 1 s, 2 s, 5 s, … 1 min, 2 min, 5 min, … 1 h …).
- `pass_rate_chart(title, scores, grouped)` is the leaderboard's interval chart of any
  scores with `agent`, `group`, `pass_rate`, `ci_low`, `ci_high`, `passed`, `failed` (the
  read model's `AgentScore`), under group headings when `grouped`.
- An empty input gives a small chart that says "no data".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from markupsafe import Markup, escape

from testbed.render import palette
from testbed.render.format import axis_duration, percent

CHAR_W = 7.2
"""Estimated width in px of one character of 12 px sans-serif text (generous, never tight)."""

ROW_H = 24
PLOT_W = 380
TOP = 30  # title
AXIS_H = 46  # tick labels and axis title under the plot
PAD = 10


@dataclass(frozen=True)
class Bar:
    """One bar: `value` on the axis; `text` printed beside it."""

    label: str
    value: float
    text: str
    color: str = palette.NEUTRAL


@dataclass(frozen=True)
class Point:
    """A value with its interval (fractions in [0, 1]); `text` printed beside it."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    text: str
    group: str = ""
    color: str = palette.NEUTRAL


@dataclass(frozen=True)
class Span:
    """One range row: min, median and max (seconds)."""

    label: str
    low: float
    mid: float
    high: float
    text: str


def nice_ticks(top: float, target: int = 5) -> list[float]:
    """Ticks from 0 to at least `top` at a step of 1, 2 or 5 times a power of ten."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(count + 1)]


DURATION_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400)
"""Tick steps (seconds) of a duration axis."""


def duration_ticks(top: float, target: int = 6) -> list[float]:
    """Ticks from 0 to at least `top` seconds at a step people read (1 s … 1 day)."""
    step = next((s for s in DURATION_STEPS if top / s <= target), DURATION_STEPS[-1])
    count = max(1, math.ceil(top / step - 1e-9))
    return [float(i * step) for i in range(count + 1)]


def _width(text: str) -> float:
    return len(text) * CHAR_W


@dataclass(frozen=True)
class _Frame:
    """Where the plot sits: label column, plot area, value-text column."""

    label_w: float
    text_w: float
    rows: int
    ticks: list[float]

    @property
    def plot_x(self) -> float:
        return PAD + self.label_w + 8

    @property
    def width(self) -> float:
        return self.plot_x + PLOT_W + 10 + self.text_w + PAD

    @property
    def plot_h(self) -> float:
        return self.rows * ROW_H

    @property
    def height(self) -> float:
        return TOP + self.plot_h + AXIS_H

    def x(self, value: float) -> float:
        top = self.ticks[-1] or 1.0
        return self.plot_x + max(0.0, min(value, top)) / top * PLOT_W

    def row_y(self, i: int) -> float:
        return TOP + i * ROW_H


def _frame(labels: Sequence[str], texts: Sequence[str], ticks: list[float]) -> _Frame:
    return _Frame(max(map(_width, labels), default=0.0), max(map(_width, texts), default=0.0), len(labels), ticks)


def _axis(f: _Frame, axis: str, tick_text: Callable[[float], str]) -> list[str]:
    base = TOP + f.plot_h
    parts = [f'<line x1="{f.plot_x:.1f}" y1="{TOP}" x2="{f.plot_x:.1f}" y2="{base}" stroke="#999"/>']
    for t in f.ticks:
        x = f.x(t)
        parts.append(
            f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{base}" stroke="#e6e8eb"/>'
            f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 5}" stroke="#666"/>'
            f'<text x="{x:.1f}" y="{base + 18}" text-anchor="middle" class="tick" fill="{palette.MUTED}">'
            f"{escape(tick_text(t))}</text>"
        )
    parts.append(
        f'<line x1="{f.plot_x:.1f}" y1="{base}" x2="{f.plot_x + PLOT_W:.1f}" y2="{base}" stroke="#666"/>'
        f'<text x="{f.plot_x + PLOT_W / 2:.1f}" y="{base + 38}" text-anchor="middle" class="axis-title">'
        f"{escape(axis)}</text>"
    )
    return parts


def _svg(title: str, f: _Frame, body: list[str]) -> Markup:
    w, h = math.ceil(f.width), math.ceil(f.height)
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="axis-chart" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" font-family="sans-serif" font-size="12">'
        f"<title>{escape(title)}</title>"
        f'<text x="{PAD}" y="18" font-weight="600" font-size="13">{escape(title)}</text>' + "".join(body) + "</svg>"
    )


def _empty(title: str) -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="axis-chart" width="300" height="46" role="img">'
        f"<title>{escape(title)}</title>"
        f'<text x="{PAD}" y="18" font-weight="600" font-size="13">{escape(title)}</text>'
        f'<text x="{PAD}" y="38" font-size="12" fill="{palette.MUTED}">no data</text></svg>'
    )


def _label(f: _Frame, i: int, text: str, *, bold: bool = False) -> str:
    y = f.row_y(i) + ROW_H * 0.66
    weight = ' font-weight="600"' if bold else ""
    return f'<text x="{f.plot_x - 8:.1f}" y="{y:.1f}" text-anchor="end"{weight}>{escape(text)}</text>'


def _value_text(f: _Frame, i: int, text: str) -> str:
    y = f.row_y(i) + ROW_H * 0.66
    return f'<text x="{f.plot_x + PLOT_W + 10:.1f}" y="{y:.1f}" class="value">{escape(text)}</text>'


def _share_tick(t: float) -> str:
    return percent(t)


def _plain_tick(t: float) -> str:
    return f"{t:g}"


def bar_chart(
    title: str, bars: Sequence[Bar], axis: str, scale: float | None = None, ticks: Callable[[float], str] | None = None
) -> Markup:
    """Horizontal bars from 0 (see the module contract)."""
    if not bars:
        return _empty(title)
    top = scale if scale is not None else max(b.value for b in bars)
    tick_values = nice_ticks(top) if scale is None else nice_ticks(scale)
    tick_text = ticks or (_share_tick if scale == 1.0 else _plain_tick)
    f = _frame([b.label for b in bars], [b.text for b in bars], tick_values)
    body = _axis(f, axis, tick_text)
    for i, b in enumerate(bars):
        y = f.row_y(i) + 5
        body += [
            _label(f, i, b.label),
            f'<rect x="{f.plot_x:.1f}" y="{y}" width="{f.x(b.value) - f.plot_x:.1f}" height="{ROW_H - 10}" '
            f'fill="{b.color}"><title>{escape(b.label)}: {escape(b.text)}</title></rect>',
            _value_text(f, i, b.text),
        ]
    return _svg(title, f, body)


def interval_chart(title: str, points: Sequence[Point], axis: str) -> Markup:
    """Dots with whiskers on a percent axis, grouped (see the module contract)."""
    if not points:
        return _empty(title)
    rows: list[Point | str] = []
    for p in points:
        if p.group and (not rows or _group_of(rows) != p.group):
            rows.append(p.group)
        rows.append(p)
    labels = [r if isinstance(r, str) else r.label for r in rows]
    texts = ["" if isinstance(r, str) else r.text for r in rows]
    f = _frame(labels, texts, nice_ticks(1.0))
    body = _axis(f, axis, _share_tick)
    for i, r in enumerate(rows):
        if isinstance(r, str):
            body.append(_label(f, i, r, bold=True))
            continue
        cy = f.row_y(i) + ROW_H / 2
        body += [_label(f, i, r.label), _value_text(f, i, r.text)]
        if r.low is not None and r.high is not None:
            x1, x2 = f.x(r.low), f.x(r.high)
            body.append(
                f'<line x1="{x1:.1f}" y1="{cy}" x2="{x2:.1f}" y2="{cy}" stroke="{r.color}" stroke-width="2"/>'
                f'<line x1="{x1:.1f}" y1="{cy - 5}" x2="{x1:.1f}" y2="{cy + 5}" stroke="{r.color}" stroke-width="2"/>'
                f'<line x1="{x2:.1f}" y1="{cy - 5}" x2="{x2:.1f}" y2="{cy + 5}" stroke="{r.color}" stroke-width="2"/>'
            )
        if r.value is not None:
            body.append(
                f'<circle cx="{f.x(r.value):.1f}" cy="{cy}" r="5" fill="{r.color}" class="point">'
                f"<title>{escape(r.label)}: {escape(r.text)}</title></circle>"
            )
    return _svg(title, f, body)


def _group_of(rows: list[Point | str]) -> str:
    for r in reversed(rows):
        if isinstance(r, str):
            return r
    return ""


def range_chart(title: str, spans: Sequence[Span], axis: str) -> Markup:
    """min-max lines with a median dot, on a duration axis from 0 (see the module contract)."""
    if not spans:
        return _empty(title)
    f = _frame([s.label for s in spans], [s.text for s in spans], duration_ticks(max(s.high for s in spans)))
    body = _axis(f, axis, axis_duration)
    for i, s in enumerate(spans):
        cy = f.row_y(i) + ROW_H / 2
        body += [
            _label(f, i, s.label),
            f'<line x1="{f.x(s.low):.1f}" y1="{cy}" x2="{f.x(s.high):.1f}" y2="{cy}" stroke="{palette.NEUTRAL}" '
            f'stroke-width="4" stroke-linecap="round"/>',
            f'<circle cx="{f.x(s.mid):.1f}" cy="{cy}" r="5" fill="{palette.OUTCOME["failed"]}">'
            f"<title>{escape(s.label)}: {escape(s.text)}</title></circle>",
            _value_text(f, i, s.text),
        ]
    return _svg(title, f, body)


PASS_RATE_AXIS = "pass rate, dot; Wilson 95 % interval, whiskers"


class Scored(Protocol):
    """An agent's pass rate with its interval (the leaderboard's rows)."""

    @property
    def agent(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def pass_rate(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def passed(self) -> int: ...
    @property
    def failed(self) -> int: ...


def pass_rate_chart(title: str, scores: Sequence[Scored], grouped: bool = False) -> Markup:
    """The interval chart of `scores` (see the module contract)."""
    points = [
        Point(s.agent, s.pass_rate, s.ci_low, s.ci_high,
              f"{percent(s.pass_rate, 1)} [{percent(s.ci_low, 1)}, {percent(s.ci_high, 1)}] of {s.passed + s.failed}"
              if s.pass_rate is not None else "no decided run", group=s.group if grouped else "")
        for s in scores
    ]  # fmt: skip
    return interval_chart(title, points, PASS_RATE_AXIS)

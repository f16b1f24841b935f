"""Inline SVG charts for the dashboard and the HTML report: no script, no external resource.

Contracts:

- Every function returns `markupsafe.Markup` holding one `<svg>` element (or, for an empty
  dashboard chart, a short `<p>`); every label and title is XML-escaped. Colours come from
  `testbed.render.palette` only.
- Dashboard charts (`outcome_bar`, `rate_bars`, `ring`, `timeline`, `progress`) shrink with
  their container (`viewBox` + `width="100%"`) but never grow past their natural width.
- The report's charts, with real axes, are `testbed.render.charts`.
- Inputs are read through the `Tally` and `TimedPhase` protocols (the read model's outcome
  counts and phases satisfy them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from markupsafe import Markup, escape

from testbed.render import palette
from testbed.render.format import axis_duration, percent

SEGMENTS: tuple[str, ...] = ("passed", "failed", "error", "cancelled", "unfinished")
"""Outcomes in the order they are stacked."""


class Tally(Protocol):
    """Runs of one group counted by outcome."""

    @property
    def key(self) -> str: ...
    @property
    def total(self) -> int: ...
    @property
    def passed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def pass_rate(self) -> float | None: ...


class TimedPhase(Protocol):
    """A phase on a run's time axis (seconds from the first phase's start)."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def start_s(self) -> float: ...
    @property
    def duration_s(self) -> float | None: ...
    @property
    def detail(self) -> str | None: ...


# --- dashboard charts ----------------------------------------------------------------------


def _svg(width: int, height: int, body: str, label: str) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px" '
        f'preserveAspectRatio="xMinYMin meet" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">{body}</svg>'
    )


def _stack(counts: Tally, x: float, y: float, width: float, height: float) -> str:
    """Rects of `counts`' outcomes stacked left to right over `width` (with tooltips)."""
    parts: list[str] = [f'<rect x="{x}" y="{y}" width="{width}" height="{height}" fill="{palette.TRACK}" rx="3"/>']
    total = counts.total
    if not total:
        return "".join(parts)
    pos = x
    for name in SEGMENTS:
        n = getattr(counts, name)
        if not n:
            continue
        w = width * n / total
        parts.append(
            f'<rect x="{pos:.2f}" y="{y}" width="{w:.2f}" height="{height}" fill="{palette.OUTCOME[name]}">'
            f"<title>{name}: {n}</title></rect>"
        )
        pos += w
    return "".join(parts)


def outcome_bar(counts: Tally, *, width: int = 600, height: int = 22) -> Markup:
    """One bar: the runs of `counts` stacked by outcome."""
    return _svg(width, height, _stack(counts, 0, 0, width, height), f"outcomes of {counts.total} runs")


def progress(counts: Tally, *, width: int = 300, height: int = 14) -> Markup:
    """A job's progress: finished runs stacked by outcome, unfinished ones in blue."""
    return _svg(width, height, _stack(counts, 0, 0, width, height), f"{counts.total} runs")


def rate_bars(groups: Sequence[Tally], *, width: int = 560, row: int = 24, label_width: int = 190) -> Markup:
    """One row per group: its name, a bar of its runs stacked by outcome, and its pass rate."""
    if not groups:
        return Markup('<p class="muted">No runs yet.</p>')
    bar_width = width - label_width - 110
    body: list[str] = []
    for i, g in enumerate(groups):
        y = i * row
        body.append(
            f'<text x="0" y="{y + row * 0.68:.1f}" class="lbl"><title>{escape(g.key)}</title>'
            f"{escape(_clip(g.key, 27))}</text>"
        )
        body.append(_stack(g, label_width, y + 4, bar_width, row - 8))
        decided = g.passed + g.failed
        body.append(
            f'<text x="{label_width + bar_width + 8}" y="{y + row * 0.68:.1f}" class="num">'
            f'{percent(g.pass_rate)} <tspan class="muted">{g.passed}/{decided}</tspan></text>'
        )
    return _svg(width, row * len(groups), "".join(body), "pass rate by group")


def ring(share: float | None, *, colour: str = palette.OUTCOME["failed"], size: int = 84) -> Markup:
    """A ring filled to `share` (0..1) with the percentage in the middle; grey when None."""
    r = size / 2 - 7
    c = size / 2
    circumference = 2 * math.pi * r
    filled = 0.0 if share is None else max(0.0, min(1.0, share)) * circumference
    body = (
        f'<circle cx="{c}" cy="{c}" r="{r:.2f}" fill="none" stroke="{palette.TRACK}" stroke-width="10"/>'
        f'<circle cx="{c}" cy="{c}" r="{r:.2f}" fill="none" stroke="{colour}" stroke-width="10" '
        f'stroke-dasharray="{filled:.2f} {circumference:.2f}" transform="rotate(-90 {c} {c})"/>'
        f'<text x="{c}" y="{c + 6}" text-anchor="middle" class="big">{percent(share)}</text>'
    )
    return Markup(
        f'<svg class="ring" viewBox="0 0 {size} {size}" width="{size}" height="{size}" role="img" '
        f'aria-label="{percent(share)}" xmlns="http://www.w3.org/2000/svg">{body}</svg>'
    )


def _tick_step(span: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400):
        if span / step <= 8:
            return float(step)
    return 28800.0


def _axis(span: float, scale: float, label_width: int, height: int) -> list[str]:
    """Grid lines and tick labels of a timeline from 0 to `span` seconds."""
    parts: list[str] = []
    step = _tick_step(span)
    t = 0.0
    while t <= span + 1e-9:
        x = label_width + t * scale
        parts.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 18}" class="grid"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" class="tick">{axis_duration(t)}</text>')
        t += step
    return parts


def timeline(phases: Sequence[TimedPhase], *, now_s: float | None = None, width: int = 1200, row: int = 24) -> Markup:
    """Gantt-style bars of `phases` on a shared time axis (an open phase runs to `now_s`,
    else to the end of the axis), labelled with name and duration."""
    if not phases:
        return Markup('<p class="muted">No phases recorded.</p>')
    ends = [p.start_s + (p.duration_s or 0.0) for p in phases]
    span = max([*ends, now_s or 0.0, 1.0])
    label_width, right = 110, 70
    scale = (width - label_width - right) / span
    height = row * len(phases) + 22
    body = _axis(span, scale, label_width, height)
    for i, p in enumerate(phases):
        y = i * row
        open_end = now_s if now_s is not None else span
        dur = p.duration_s if p.duration_s is not None else max(0.0, open_end - p.start_s)
        x = label_width + p.start_s * scale
        w = max(2.0, dur * scale)
        colour = palette.PHASE.get(p.status, palette.OUTCOME["cancelled"])
        tip = f"{p.name}: {p.status}, {dur:.1f}s" + (f" — {p.detail}" if p.detail else "")
        body.append(f'<text x="0" y="{y + row * 0.68:.1f}" class="lbl">{escape(p.name)}</text>')
        body.append(
            f'<rect x="{x:.2f}" y="{y + 4}" width="{w:.2f}" height="{row - 8}" rx="3" fill="{colour}" '
            f'class="phase-{escape(p.status)}"><title>{escape(tip)}</title></rect>'
        )
        running = " …" if p.duration_s is None else ""
        shown = axis_duration(dur) if dur >= 1 else f"{dur:.1f}s"
        body.append(f'<text x="{x + w + 5:.2f}" y="{y + row * 0.68:.1f}" class="num">{shown}{running}</text>')
    return _svg(width, height, "".join(body), "phase timeline")


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"

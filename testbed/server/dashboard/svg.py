"""Inline SVG charts drawn on the server (no JavaScript, no external assets).

Contract: every function returns `markupsafe.Markup` holding one `<svg>` element whose text
is escaped; sizes are in CSS pixels and the SVG shrinks with its container (`viewBox` +
`width="100%"`) but never grows past its natural width. Colours match the stylesheet's outcome classes.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from testbed.server.dashboard.data import OutcomeCounts, PhaseBar

COLOURS: dict[str, str] = {
    "passed": "#2f9e5b",
    "failed": "#d64545",
    "error": "#e39b2d",
    "cancelled": "#9aa0a6",
    "unfinished": "#5b8def",
}
"""Fill colour of each outcome (and of unfinished runs)."""

PHASE_COLOURS: dict[str, str] = {
    "ok": "#2f9e5b",
    "running": "#5b8def",
    "failed": "#d64545",
    "error": "#e39b2d",
    "skipped": "#c4c8cc",
    "cancelled": "#9aa0a6",
}
"""Fill colour of a phase bar by the phase's status."""

SEGMENTS: tuple[str, ...] = ("passed", "failed", "error", "cancelled", "unfinished")


def _pct(value: float | None) -> str:
    return "\u2013" if value is None else f"{value * 100:.0f}%"


def _svg(width: int, height: int, body: str, label: str) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px" '
        f'preserveAspectRatio="xMinYMin meet" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">{body}</svg>'
    )


def _stack(counts: OutcomeCounts, x: float, y: float, width: float, height: float) -> str:
    """Rects of `counts`' outcomes stacked left to right over `width` (with tooltips)."""
    parts: list[str] = [f'<rect x="{x}" y="{y}" width="{width}" height="{height}" fill="#eef0f3" rx="3"/>']
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
            f'<rect x="{pos:.2f}" y="{y}" width="{w:.2f}" height="{height}" fill="{COLOURS[name]}">'
            f"<title>{name}: {n}</title></rect>"
        )
        pos += w
    return "".join(parts)


def outcome_bar(counts: OutcomeCounts, *, width: int = 600, height: int = 22) -> Markup:
    """One bar: the runs of `counts` stacked by outcome."""
    return _svg(width, height, _stack(counts, 0, 0, width, height), f"outcomes of {counts.total} runs")


def rate_bars(groups: Sequence[OutcomeCounts], *, width: int = 560, row: int = 24, label_width: int = 190) -> Markup:
    """One row per group: its name, a bar of its runs stacked by outcome, and its pass rate."""
    if not groups:
        return Markup('<p class="muted">No runs yet.</p>')
    bar_width = width - label_width - 110
    body: list[str] = []
    for i, g in enumerate(groups):
        y = i * row
        name = g.key if len(g.key) <= 27 else g.key[:26] + "…"
        body.append(
            f'<text x="0" y="{y + row * 0.68:.1f}" class="lbl"><title>{escape(g.key)}</title>{escape(name)}</text>'
        )
        body.append(_stack(g, label_width, y + 4, bar_width, row - 8))
        decided = g.passed + g.failed
        body.append(
            f'<text x="{label_width + bar_width + 8}" y="{y + row * 0.68:.1f}" class="num">'
            f'{_pct(g.pass_rate)} <tspan class="muted">{g.passed}/{decided}</tspan></text>'
        )
    return _svg(width, row * len(groups), "".join(body), "pass rate by group")


def ring(share: float | None, *, colour: str = "#d64545", size: int = 84) -> Markup:
    """A ring filled to `share` (0..1) with the percentage in the middle; grey when None."""
    r = size / 2 - 7
    c = size / 2
    circumference = 2 * 3.141592653589793 * r
    filled = 0.0 if share is None else max(0.0, min(1.0, share)) * circumference
    body = (
        f'<circle cx="{c}" cy="{c}" r="{r:.2f}" fill="none" stroke="#eef0f3" stroke-width="10"/>'
        f'<circle cx="{c}" cy="{c}" r="{r:.2f}" fill="none" stroke="{colour}" stroke-width="10" '
        f'stroke-dasharray="{filled:.2f} {circumference:.2f}" transform="rotate(-90 {c} {c})"/>'
        f'<text x="{c}" y="{c + 6}" text-anchor="middle" class="big">{_pct(share)}</text>'
    )
    return Markup(
        f'<svg class="ring" viewBox="0 0 {size} {size}" width="{size}" height="{size}" role="img" '
        f'aria-label="{_pct(share)}" xmlns="http://www.w3.org/2000/svg">{body}</svg>'
    )


def _tick_step(span: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400):
        if span / step <= 8:
            return float(step)
    return 28800.0


def _fmt_s(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m" if seconds % 60 == 0 else f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def timeline(phases: Sequence[PhaseBar], *, now_s: float | None = None, width: int = 1200, row: int = 24) -> Markup:
    """Gantt-style bars of `phases` on a shared time axis (an open phase runs to `now_s`,
    else to the end of the axis), labelled with name and duration."""
    if not phases:
        return Markup('<p class="muted">No phases recorded.</p>')
    ends = [p.start_s + (p.duration_s or 0.0) for p in phases]
    span = max([*ends, now_s or 0.0, 1.0])
    label_width, right = 110, 70
    axis = width - label_width - right
    scale = axis / span
    height = row * len(phases) + 22
    body: list[str] = []
    step = _tick_step(span)
    t = 0.0
    while t <= span + 1e-9:
        x = label_width + t * scale
        body.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 18}" class="grid"/>')
        body.append(f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" class="tick">{_fmt_s(t)}</text>')
        t += step
    for i, p in enumerate(phases):
        y = i * row
        open_end = now_s if now_s is not None else span
        dur = p.duration_s if p.duration_s is not None else max(0.0, open_end - p.start_s)
        x = label_width + p.start_s * scale
        w = max(2.0, dur * scale)
        colour = PHASE_COLOURS.get(p.status, "#9aa0a6")
        tip = f"{p.name}: {p.status}, {dur:.1f}s" + (f" — {p.detail}" if p.detail else "")
        body.append(f'<text x="0" y="{y + row * 0.68:.1f}" class="lbl">{escape(p.name)}</text>')
        body.append(
            f'<rect x="{x:.2f}" y="{y + 4}" width="{w:.2f}" height="{row - 8}" rx="3" fill="{colour}" '
            f'class="phase-{escape(p.status)}"><title>{escape(tip)}</title></rect>'
        )
        running = " …" if p.duration_s is None else ""
        shown = _fmt_s(dur) if dur >= 1 else f"{dur:.1f}s"
        body.append(f'<text x="{x + w + 5:.2f}" y="{y + row * 0.68:.1f}" class="num">{shown}{running}</text>')
    return _svg(width, height, "".join(body), "phase timeline")


def progress(counts: OutcomeCounts, *, width: int = 300, height: int = 14) -> Markup:
    """A job's progress: finished runs stacked by outcome, unfinished ones in blue."""
    return _svg(width, height, _stack(counts, 0, 0, width, height), f"{counts.total} runs")

"""The one set of colours of testbed's charts and pages, keyed by outcome.

Contract: `OUTCOME[name]` for every outcome (passed, failed, error, cancelled) and
`unfinished`; everything else derives from it — a phase status (`PHASE`), a residue
verdict (`RESIDUE_VERDICT`) — so an outcome has the same colour on the dashboard, in the
HTML report and in the run timeline. `NEUTRAL` fills bars that show no outcome, `TRACK` is
the empty part of a bar, `RESIDUE` marks residue (its badge and ring), `MUTED` is grey text.
"""

from __future__ import annotations

OUTCOME: dict[str, str] = {
    "passed": "#2f9e5b",
    "failed": "#d64545",
    "error": "#e39b2d",
    "cancelled": "#9aa0a6",
    "unfinished": "#5b8def",
}
"""Fill colour of each outcome (and of unfinished runs)."""

PHASE: dict[str, str] = {
    "ok": OUTCOME["passed"],
    "running": OUTCOME["unfinished"],
    "failed": OUTCOME["failed"],
    "error": OUTCOME["error"],
    "skipped": "#c4c8cc",
    "cancelled": OUTCOME["cancelled"],
}
"""Fill colour of a phase bar by the phase's status."""

RESIDUE_VERDICT: dict[str, str] = {
    "yes": OUTCOME["failed"],
    "no": OUTCOME["passed"],
    "undetermined": OUTCOME["error"],
    "not analysed": OUTCOME["cancelled"],
}
"""Colour of a run's residue verdict (left residue reads like a failure)."""

NEUTRAL = "#4c78a8"
TRACK = "#eef0f3"
RESIDUE = "#8250df"
MUTED = "#666"

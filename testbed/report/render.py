"""Rendering of `Figures` as Markdown or self-contained HTML (Jinja2 templates shipped in
`testbed/report/templates/`).

Contracts:

- `render_markdown(figures)` / `render_html(figures)` return the whole document; the HTML
  has inline CSS and inline SVG charts only (no script, no external URL), so it works
  offline. Every number of the Markdown tables appears in the HTML tables too.
- `format_for(path)` maps `.md` → "markdown", `.html`/`.htm` → "html", anything else →
  `InputError(path, "--out", ...)`. `write_report(figures, path)` renders by extension.
- Rates print as percentages with one decimal (`62.5%`), missing values as `-`,
  durations as `12.3 s`, `4.5 min` or `1.2 h`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from testbed.db.read.figures import Figures
from testbed.db.read.leaderboard import AgentScore, common_k
from testbed.errors import InputError
from testbed.render import palette
from testbed.render.charts import Bar, Span, bar_chart, pass_rate_chart, range_chart
from testbed.render.format import count, duration_in_units, percent, usd

FORMATS: dict[str, str] = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}


def pct(value: float | None) -> str:
    """`0.625` → `62.5%`; None → `-`."""
    return percent(value, digits=1, missing="-")


def dur(seconds: float | None) -> str:
    """Seconds as `12.3 s`, `4.5 min` or `1.2 h`; None → `-`."""
    return duration_in_units(seconds)


def pass_at(score: AgentScore, k: int) -> str:
    """pass@k of `score` as a percentage, `-` when no cell has k decided attempts."""
    return pct(score.pass_at.get(k))


def md(text: object) -> str:
    """A value made safe for a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("testbed.report", "templates"),
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(pct=pct, dur=dur, md=md, usd=usd, num=count, passk=pass_at)
    return env


def charts(figures: Figures) -> dict[str, Markup]:
    """The SVG charts of the HTML report, by section."""
    return {**_study_charts(figures), **_leaderboard_charts(figures)}


def _study_charts(figures: Figures) -> dict[str, Markup]:
    r = figures.residue
    passed, failed, verdict = palette.OUTCOME["passed"], palette.OUTCOME["failed"], palette.RESIDUE_VERDICT
    verdicts = [
        ("with residue", r.with_residue, "yes"),
        ("without residue", r.without_residue, "no"),
        ("undetermined", r.undetermined, "undetermined"),
        ("not analysed", r.not_analysed, "not analysed"),
    ]
    return {
        "pass_rates": bar_chart(
            "Pass rate by category",
            [Bar(p.category, p.pass_rate or 0.0,
                 f"{pct(p.pass_rate)} of {p.passed + p.failed}" if p.passed + p.failed else "no decided run", passed)
             for p in figures.pass_rates],
            "pass rate = passed / (passed + failed)", scale=1.0,
        ),
        "command_failures": bar_chart(
            "Agent command failure rate by OS release",
            [Bar(o.os_release, o.failure_rate or 0.0, f"{pct(o.failure_rate)} of {o.commands}", failed)
             for o in figures.command_failures],
            "share of agent commands with a non-zero exit", scale=1.0,
        ),
        "residue": bar_chart(
            "Runs by residue verdict",
            [Bar(label, n, str(n), verdict[key]) for label, n, key in verdicts] if r.runs else [], "runs",
        ),
        "residue_by_category": bar_chart(
            "Residue by category",
            [Bar(c.category, c.share_of_runs or 0.0, f"{pct(c.share_of_runs)}: {c.runs} runs, {c.findings} findings")
             for c in figures.residue_by_category],
            "share of runs with such residue", scale=1.0,
        ),
        "impact_classes": bar_chart(
            "High-impact classes",
            [Bar(i.impact_class, i.share_of_runs or 0.0, f"{pct(i.share_of_runs)}, {i.commands} commands")
             for i in figures.impact_classes],
            "share of runs with such a command", scale=1.0,
        ),
        "completion_times": range_chart(
            "Completion time by category (min, median, max)",
            [Span(t.category, t.min_s, t.median_s, t.max_s, f"median {dur(t.median_s)}")
             for t in figures.completion_times],
            "run duration, start to finish (boot, setup, agent, checks, teardown)",
        ),
        "reboot_regressions": bar_chart(
            "Requirements that failed after the reboot",
            [Bar(f"{g.task_id} {g.requirement}", g.runs, str(g.runs), failed) for g in figures.reboot_regressions],
            "runs",
        ),
    }  # fmt: skip


def _leaderboard_charts(figures: Figures) -> dict[str, Markup]:
    lb = figures.leaderboard
    timed = [s for s in lb.agents if s.median_agent_s is not None]
    priced = [s for s in lb.agents if s.cost_per_solved is not None]
    return {
        "leaderboard": pass_rate_chart("Pass rate by agent", lb.agents),
        "leaderboard_by_category": pass_rate_chart("Pass rate by agent and category", lb.by_category, True),
        "leaderboard_by_release": pass_rate_chart("Pass rate by agent and release", lb.by_release, True),
        "agent_time": bar_chart(
            "Median agent time by agent",
            [Bar(s.agent, s.median_agent_s or 0.0, dur(s.median_agent_s)) for s in timed],
            "median duration of the agent phase (seconds)",
        ),
        "cost_per_solved": bar_chart(
            "Cost per solved task by agent",
            [Bar(s.agent, s.cost_per_solved or 0.0, usd(s.cost_per_solved)) for s in priced],
            "USD per passed run (model turns at the agent's prices)", ticks=lambda t: usd(t) if t else "$0",
        ),
    }  # fmt: skip


def _context(figures: Figures) -> dict[str, Any]:
    k = common_k(figures.leaderboard.agents)
    return {"f": figures, "lb": figures.leaderboard, "k": k,
            "generated_at": figures.generated_at.isoformat(timespec="seconds")}  # fmt: skip


def render_markdown(figures: Figures) -> str:
    """The report as Markdown."""
    return _environment(autoescape=False).get_template("report.md.j2").render(**_context(figures))


def render_html(figures: Figures) -> str:
    """The report as one self-contained HTML page with inline SVG charts."""
    template = _environment(autoescape=True).get_template("report.html.j2")
    return template.render(**_context(figures), charts=charts(figures))


def format_for(path: Path) -> str:
    """The format, "markdown" or "html", from the extension of `path` (see the module contract)."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(path, "--out", f"unknown extension {path.suffix or '(none)'!r}: use .md or .html")
    return fmt


def write_report(figures: Figures, path: Path) -> str:
    """Render `figures` in the format `path`'s extension names, write it; return the format."""
    fmt = format_for(path)
    text = render_markdown(figures) if fmt == "markdown" else render_html(figures)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return fmt

"""A run's trajectory and two runs side by side on a terminal: the stream section of
`testbed runs show` and the table of `testbed runs compare A B` (`testbed.cli.runs`).

The stream is built once by `testbed.db.read.trajectory`; this module only draws it. Every
stored text goes through `testbed.render.terminal.cell` (no markup, no control sequence).
In the stream a command's output shows its first `OUTPUT_LINES` lines (the rest is counted;
`runs show --json` or the dashboard has it all).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from testbed.db.read.compare import Comparison
from testbed.db.read.trajectory import CommandStep, Trajectory, TurnStep
from testbed.render.format import count, duration, usd
from testbed.render.terminal import cell, console

OUTPUT_LINES = 8
"""Lines of a command's stdout (and of its stderr) shown in the terminal stream."""

COMMAND_LINES = 12
"""Lines of a command's text shown in the stream."""

STATUS_STYLE = {"ok": "green", "timeout": "yellow", "error": "red", "-": "dim"}


def _lines(text: str, limit: int) -> tuple[list[str], int]:
    lines = text.rstrip("\n").splitlines()
    return lines[:limit], max(0, len(lines) - limit)


def _indented(text: str, prefix: str, limit: int, style: str = "") -> list[Text]:
    shown, more = _lines(text, limit)
    out = [Text.assemble((prefix, "dim"), cell(line, style=style)) for line in shown]
    if more:
        out.append(Text(f"{prefix}… {more} more line(s)", style="dim"))
    return out


def _turn_lines(step: TurnStep) -> list[Text]:
    t = step.turn
    head = Text.assemble(
        (f"turn {t.seq}", "bold magenta"), "  ", cell(t.model), "  ", duration(t.latency_ms / 1000),
        f"  {count(t.total_tokens)} tok ({count(t.prompt_tokens)} in / {count(t.completion_tokens)} out)",
        f"  {usd(t.cost_usd)}" if t.cost_usd is not None else "", f"  {t.finish_reason}" if t.finish_reason else "",
    )  # fmt: skip
    out = [head]
    if t.error:
        out.append(Text.assemble(("  error: ", "red"), cell(t.error)))
    if t.reasoning:
        out += _indented(t.reasoning, "  thinks │ ", COMMAND_LINES, style="italic")
    if t.text:
        out += _indented(t.text, "  says   │ ", COMMAND_LINES)
    if t.refusal:
        out.append(Text.assemble(("  refuses: ", "red"), cell(t.refusal)))
    for call in t.tool_calls:
        if call.get("error"):
            out.append(Text.assemble(("  malformed call ", "red"), cell(call.get("id")), ": ", cell(call["error"])))
    return out


def _command_lines(step: CommandStep) -> list[Text]:
    c = step.command
    via = f" ← {step.tool_call_id}" if step.tool_call_id else ""
    head = Text.assemble(
        ("  $ " if c.source == "agent" else "  # ", "bold"), (f"#{c.seq} ", "dim"), cell(c.node or "-"), " ",
        (step.status, STATUS_STYLE.get(step.status, "red")), f"  {duration(c.duration_ms / 1000)}", (via, "dim"),
    )  # fmt: skip
    out = [head, *_indented(c.command, "    ", COMMAND_LINES, style="bold")]
    out += _indented(c.stdout, "    │ ", OUTPUT_LINES)
    out += _indented(c.stderr, "    ! ", OUTPUT_LINES, style="red")
    if c.error:
        out.append(Text.assemble(("    error: ", "red"), cell(c.error)))
    for ch in step.changes:
        conf = f" ({ch.confidence})" if ch.confidence else ""
        out.append(Text.assemble(("    Δ ", "yellow"), cell(ch.summary), (f" [finding {ch.finding_id}{conf}]", "dim")))
    for f in step.findings:
        out.append(Text.assemble(("    ⚑ ", "red"), f"{f.kind} {f.category}: ", cell(f.summary)))
    return out


def stream_lines(t: Trajectory) -> list[Text]:
    """The trajectory as lines of text (instruction, steps, checks, totals)."""
    out = [Text("trajectory", style="bold underline"), Text("instruction", style="bold")]
    out += _indented(t.instruction or "(not recorded)", "  ┃ ", 40)
    for step in t.steps:
        out += _turn_lines(step) if isinstance(step, TurnStep) else _command_lines(step)
    for f in t.other_findings:
        out.append(Text.assemble(("⚑ ", "red"), f"{f.kind} {f.category}: ", cell(f.summary), (" (no command)", "dim")))
    for k in t.checks:
        where = (f"{k.point or '-'} {k.node or ''}", "dim")
        out.append(Text.assemble(("check ", "bold"), cell(k.requirement), " ", cell(k.status), " ", where, " ",
                                 cell(k.description or "")))  # fmt: skip
    out.append(Text(_totals(t), style="bold"))
    return out


def _totals(t: Trajectory) -> str:
    s = t.totals
    return (
        f"totals: {s.turns} turn(s), {s.commands} command(s), {count(s.total_tokens)} tokens, "
        f"cost {usd(s.cost_usd)}, model time {duration(s.model_latency_ms / 1000)}, "
        f"agent phase {duration(s.agent_s)}"
    )


def print_trajectory(t: Trajectory) -> None:
    """Print the stream to stdout."""
    out = console()
    for line in stream_lines(t):
        out.print(line)


def _metric_rows(c: Comparison) -> list[tuple[str, str, str]]:
    rows = []
    for label, get in (
        ("run", lambda t: t.run.id),
        ("agent", lambda t: t.run.agent),
        ("image · attempt", lambda t: f"{t.run.image or '-'} · {t.run.attempt}"),
        ("outcome", lambda t: t.run.outcome or t.run.state),
        ("residue", lambda t: t.run.residue or "-"),
        ("agent phase", lambda t: duration(t.totals.agent_s)),
        ("turns · commands", lambda t: f"{t.totals.turns} · {t.totals.commands}"),
        ("tokens", lambda t: count(t.totals.total_tokens)),
        ("cost", lambda t: usd(t.totals.cost_usd)),
        ("findings", lambda t: str(sum(len(s.findings) for s in t.steps if isinstance(s, CommandStep)))),
    ):
        rows.append((label, get(c.a), get(c.b)))
    return rows


def comparison_table(c: Comparison) -> Table:
    """The two runs side by side: metrics, checks, then both streams."""
    version = {True: "same task version", False: "the task changed between them", None: "task version unknown"}
    table = Table(title=f"{c.task_id}: two runs ({version[c.same_version]})", title_justify="left", expand=True)
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("A", ratio=1, overflow="fold")
    table.add_column("B", ratio=1, overflow="fold")
    for label, a, b in _metric_rows(c):
        table.add_row(label, cell(a), cell(b))
    for k in c.checks:
        table.add_row(f"check {k.requirement}", cell(k.a), cell(k.b))
    left: RenderableType = Group(*stream_lines(c.a)[1:])
    right: RenderableType = Group(*stream_lines(c.b)[1:])
    table.add_row("stream", left, right)
    return table

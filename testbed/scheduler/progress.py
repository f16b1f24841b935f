"""Progress of a job while the coordinator runs it.

`LiveView` (a terminal): a Rich Live panel with the runs queued / provisioning / in the
agent phase / verifying / done, the passed, failed and error counts (harness errors apart
from agent failures), retries, VM slots in use and guests booting per host, and the
estimated time left. `LineView` (no terminal, or `--no-progress`): one line per event.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from testbed.render.format import duration
from testbed.scheduler.coordinator import Snapshot
from testbed.scheduler.store import PendingRun, RecoverReport


def render(snapshot: Snapshot) -> Group:
    """The panel for one snapshot."""
    phases = Table.grid(padding=(0, 2))
    for _ in range(5):
        phases.add_column(justify="right")
    phases.add_row(*(Text(n, style="bold") for n in ("queued", "provisioning", "agent", "verifying", "done")))
    phases.add_row(*(str(snapshot.phases.get(n, 0)) for n in ("queued", "provisioning", "agent", "verifying", "done")))
    o = snapshot.outcomes
    outcome_line = Text.assemble(
        ("passed ", "green"), str(o.get("passed", 0)), "   ",
        ("failed ", "red"), str(o.get("failed", 0)), "   ",
        ("error ", "yellow"), str(o.get("error", 0)), f" (harness; {snapshot.retries} retried)   ",
        ("cancelled ", "dim"), str(o.get("cancelled", 0)),
    )  # fmt: skip
    hosts = Table(box=None, padding=(0, 2))
    for col in ("host", "VM slots", "booting"):
        hosts.add_column(col)
    for h in snapshot.hosts:
        bar = "█" * round(10 * h.used_slots / max(h.vm_slots, 1))
        hosts.add_row(h.name, f"{h.used_slots:>3}/{h.vm_slots:<3} {bar:<10}", str(h.booting))
    state = "[yellow]stopping: tearing labs down (Ctrl-C again: at once)[/]" if snapshot.stopping else ""
    footer = Text.from_markup(
        f"job {snapshot.job_id[:8]}   elapsed {duration(snapshot.elapsed_s, missing='?')}   "
        f"left ~{duration(snapshot.eta_s, missing='?')}   {state}"
    )
    return Group(phases, outcome_line, hosts, footer)


class LiveView:
    """A Rich Live panel; use as a context manager around the coordinator's run."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self._live = Live(console=self.console, auto_refresh=False, transient=False)

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)

    def update(self, snapshot: Snapshot) -> None:
        self._live.update(render(snapshot), refresh=True)

    def event(self, kind: str, data: Any) -> None:
        if kind == "recovered" and isinstance(data, RecoverReport):
            self.console.print(_recovered(data))
        elif kind == "stopping":
            self.console.print(f"stopping: {data} running lab(s) being torn down; Ctrl-C again to destroy at once")


class LineView:
    """One line per event, for logs and non-terminals."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)

    def update(self, snapshot: Snapshot) -> None:
        """Lines only: snapshots are not printed."""

    def event(self, kind: str, data: Any) -> None:
        if kind == "started":
            run_id, host = data
            self.console.print(f"started {run_id[:8]} on {host}")
        elif kind == "done":
            run_id, outcome, follow = data
            extra = ""
            if isinstance(follow, PendingRun):
                extra = f" -> {'retry' if outcome == 'error' else 'replaced by'} {follow.run_id[:8]}"
            self.console.print(f"finished {run_id[:8]} {outcome}{extra}")
        elif kind == "recovered" and isinstance(data, RecoverReport):
            self.console.print(_recovered(data))
        elif kind == "stopping":
            self.console.print(f"stopping: tearing down {data} running lab(s)")
        elif kind == "job-cancelled":
            self.console.print("job cancelled: stopping its runs")


def _recovered(report: RecoverReport) -> str:
    return (
        f"recovered: {len(report.returned)} run(s) back to pending, {len(report.lost)} lost run(s) of dead "
        f"coordinators finished as error, {len(report.created)} follow-up run(s) created"
    )

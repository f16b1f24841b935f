"""`testbed doctor`: whether this host can run labs (`testbed.doctor` runs the checks).

Prints one row per check with its status and, for every failing line, the fix; exit status
0 when the host is healthy (warnings allowed), 1 otherwise.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table


def doctor_command() -> None:
    """Check that this host can run labs; prints the fix for every failing line."""
    from testbed.doctor import healthy, run_doctor

    checks = run_doctor()
    table = Table(title="testbed doctor")
    for col in ("check", "status", "detail", "fix"):
        table.add_column(col, overflow="fold")
    style = {"ok": "green", "warn": "yellow", "fail": "red"}
    for c in checks:
        table.add_row(c.name, f"[{style[c.status]}]{c.status}[/]", c.detail, c.fix)
    Console().print(table)
    raise typer.Exit(0 if healthy(checks) else 1)

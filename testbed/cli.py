"""The `testbed` command line. Sub-commands live beside the code they drive.

Exit statuses: 0 success; 1 a failure the command reports (a failed run, an unhealthy host);
2 bad input (file, field and problem named; nothing was created); 3 a harness error
(libvirt, QEMU, SSH, a lost guest).
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.table import Table

from testbed.analysis.cli import app as analyze_app
from testbed.analysis.redact.cli import redact_command
from testbed.db.cli import db_app, runs_app
from testbed.demo_cli import demo_command
from testbed.errors import HarnessError, InputError
from testbed.export.cli import export_command
from testbed.hypervisor.cli import lab_app, reap_command
from testbed.images.cli import app as image_app
from testbed.importers.cli import import_app
from testbed.render.terminal import error_line
from testbed.report.cli import report_command
from testbed.runner.cli import run_command, task_app
from testbed.scheduler.cli import jobs_app, launch_command
from testbed.scheduler.gate_cli import gate_command
from testbed.server.dashboard_cli import dashboard_command
from testbed.server.envapi.cli import serve_command, state_app

app = typer.Typer(
    name="testbed",
    help="Run infrastructure tasks for agents on real virtual machines.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(image_app, name="image")
app.add_typer(lab_app, name="lab")
app.command("reap")(reap_command)
app.add_typer(db_app, name="db")
app.add_typer(runs_app, name="runs")
app.add_typer(analyze_app, name="analyze")
app.add_typer(task_app, name="task")
app.command("run")(run_command)
app.command("dashboard")(dashboard_command)
app.command("serve")(serve_command)
app.add_typer(state_app, name="state")
app.command("launch")(launch_command)
app.add_typer(jobs_app, name="jobs")
app.command("gate")(gate_command)
app.command("export")(export_command)
app.command("report")(report_command)
app.command("redact")(redact_command)
app.add_typer(import_app, name="import")
app.command("demo")(demo_command)

EXIT_INPUT = 2
EXIT_HARNESS = 3


@app.command()
def doctor() -> None:
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


def main() -> None:
    # soft_wrap: never break an error line (file paths stay whole and greppable)
    err = Console(stderr=True, soft_wrap=True)
    try:
        app()
    except InputError as exc:
        err.print(error_line("error", str(exc)), highlight=False)
        sys.exit(EXIT_INPUT)
    except HarnessError as exc:
        err.print(error_line("harness error", str(exc)), highlight=False)
        sys.exit(EXIT_HARNESS)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()

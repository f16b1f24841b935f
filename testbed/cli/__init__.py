"""The `testbed` command line: the root Typer app and `main`, the `testbed` script's entry
point (`python -m testbed.cli` runs it too).

Every command group lives in its own module of this package (`testbed.cli.lab`,
`testbed.cli.runs`, `testbed.cli.jobs`, ...); this module only registers them. The command
line sits at the top of the layers: no other package of testbed imports `testbed.cli`.

Exit statuses: 0 success; 1 a failure the command reports (a failed run, an unhealthy host);
2 bad input (file, field and problem named; nothing was created); 3 a harness error
(libvirt, QEMU, SSH, a lost guest).
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from testbed.cli.analyze import app as analyze_app
from testbed.cli.dashboard import dashboard_command
from testbed.cli.db import db_app
from testbed.cli.demo import demo_command
from testbed.cli.doctor import doctor_command
from testbed.cli.export import export_command
from testbed.cli.gate import gate_command
from testbed.cli.images import app as image_app
from testbed.cli.imports import import_app
from testbed.cli.jobs import jobs_app, launch_command
from testbed.cli.lab import lab_app, reap_command
from testbed.cli.options import EXIT_HARNESS, EXIT_INPUT
from testbed.cli.redact import redact_command
from testbed.cli.report import report_command
from testbed.cli.run import run_command
from testbed.cli.runs import runs_app
from testbed.cli.serve import serve_command, state_app
from testbed.cli.tasks import task_app
from testbed.errors import HarnessError, InputError
from testbed.render.terminal import error_line

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
app.command("doctor")(doctor_command)

__all__ = ["EXIT_HARNESS", "EXIT_INPUT", "app", "main"]


def main() -> None:
    """Run the command line; `InputError` exits 2, `HarnessError` 3, Ctrl-C 130."""
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

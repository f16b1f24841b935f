"""`testbed serve`: the environment API (RL episodes over HTTP) on real labs.

Contracts:

- A bearer token is always required: `--token`, else env `TESTBED_ENV_TOKEN`, else a random
  one is generated and printed once to stderr. (`/health` alone is open.)
- Binds 127.0.0.1:8090 by default. The run database (`--db`, else `TESTBED_DB`, else the
  SQLite file under `TESTBED_HOME`) is migrated to head before serving.
- Limits: `--max-episodes` concurrent episodes (default 4), `--idle-timeout` seconds
  without a request before an episode is ended (default 900), `--step-timeout` seconds per
  command (default 300; a task's own lower limit wins).
- Bad options exit with status 2 before anything is opened.
"""

from __future__ import annotations

import secrets
import sys
from typing import Annotated

import typer

from testbed.errors import InputError

EXIT_INPUT = 2


def serve_command(
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8090,
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME).")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option("--token", envvar="TESTBED_ENV_TOKEN", help="Bearer token clients must send (default: random)."),
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="Default task for /reset bodies that name none.")] = None,
    max_episodes: Annotated[int, typer.Option("--max-episodes", help="Concurrent episodes (labs).")] = 4,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", help="Seconds idle before an episode ends.")] = 900,
    step_timeout: Annotated[float, typer.Option("--step-timeout", help="Seconds per command at most.")] = 300,
) -> None:
    """Serve the environment API: episodes (reset/step/state) on real VMs, each recorded as a run."""
    try:
        if max_episodes < 1 or idle_timeout <= 0 or step_timeout <= 0:
            raise InputError(None, "--max-episodes/--idle-timeout/--step-timeout", "must be positive")
        from testbed.config import project_root
        from testbed.db.engine import open_database
        from testbed.server.envapi.app import create_app
        from testbed.server.envapi.backend import open_runner_manager

        database = open_database(db)
        opener = open_runner_manager(
            database,
            project_root(),
            max_episodes=max_episodes,
            idle_timeout_s=idle_timeout,
            step_timeout_s=step_timeout,
        )
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_INPUT) from None
    if not token:
        token = secrets.token_urlsafe(24)
        print(f"generated token: {token}", file=sys.stderr)
    app = create_app(opener, token, default_task=task)

    import uvicorn

    shown = f"[{host}]" if ":" in host else host
    print(f"testbed environment API on http://{shown}:{port}/ (bearer token required)", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)

"""`testbed dashboard`: serve the read-only dashboard over the run database.

Contracts:

- Binds 127.0.0.1:8080 by default. A non-loopback `--host` (anything but a loopback IP
  address or `localhost`) is refused without a token: the message goes to stderr and the
  exit status is 2, before anything is opened. With a token (`--token`, or env
  `TESTBED_DASHBOARD_TOKEN` so it stays out of `ps`), every request must carry it.
- The database (`--db`, else `TESTBED_DB`, else the SQLite file under `TESTBED_HOME`) is
  opened read-only and never migrated; a missing or never-migrated database exits with 2.
  With `--demo`, a new database of sample runs is written first (`testbed.cli.demo`; into
  `--db` when given, which must then hold no run) and served.
- Requests must name the dashboard in `Host` as the bind address allows
  (`testbed.server.dashboard.hosts.HostPolicy`: DNS rebinding); `--allow-host NAME`
  (repeatable) serves further names, e.g. the name a reverse proxy forwards.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from testbed.cli.bind import is_loopback
from testbed.cli.options import EXIT_INPUT
from testbed.errors import InputError
from testbed.render.terminal import neutralise


def check_bind(host: str, token: str | None) -> None:
    """Raise `InputError` when `host` is not loopback and no token is given."""
    if not is_loopback(host) and not token:
        raise InputError(
            None,
            "--host",
            f"refusing to serve the dashboard on non-loopback address {host!r} without a token; "
            "pass --token TOKEN (or set TESTBED_DASHBOARD_TOKEN), or bind 127.0.0.1",
        )


def dashboard_command(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback unless a token is set).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")] = 8080,
    db: Annotated[
        str | None,
        typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="TESTBED_DASHBOARD_TOKEN",
            help="Require this token on every request (Authorization: Bearer, or ?token= once in a browser).",
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Also serve requests naming this host (repeatable; '*': any)."),
    ] = None,
    demo: Annotated[
        bool, typer.Option("--demo", help="Write a database of sample runs (no VMs needed) and serve it.")
    ] = False,
) -> None:
    """Serve the read-only web dashboard (overview, runs, trajectories, compare, tasks,
    leaderboard, JSON API)."""
    try:
        check_bind(host, token)
        from testbed.server.dashboard import create_app
        from testbed.server.dashboard.hosts import HostPolicy

        if demo:
            from testbed.cli.demo import demo_url, seed_demo_database

            db = db or demo_url()
            print(f"writing sample runs into {neutralise(db)} …", file=sys.stderr)
            seed_demo_database(db)
        app = create_app(db, token=token or None, hosts=HostPolicy.of(host, allow_host or ()))
    except InputError as exc:
        typer.echo(f"error: {neutralise(str(exc))}", err=True)
        raise typer.Exit(EXIT_INPUT) from None

    import uvicorn

    shown = f"[{host}]" if ":" in host else host
    print(f"testbed dashboard on http://{shown}:{port}/" + (" (token required)" if token else ""), file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)

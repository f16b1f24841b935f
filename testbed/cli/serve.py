"""`testbed serve`: the environment API (RL episodes over HTTP) on real labs.

Contracts:

- A token is required: `--token`, else env `TESTBED_ENV_TOKEN`, else a random one is
  generated and printed once to stderr. Clients send it as `Authorization: Bearer TOKEN`
  or, when they cannot set headers, as `?token=TOKEN` in the URL. (`/health` alone is
  open.) `--no-token` serves without one, for clients that send none (the stock OpenEnv
  client), and only on a loopback address: with any other `--host` it exits with status 2.
- Binds 127.0.0.1:8090 by default. The run database (`--db`, else `TESTBED_DB`, else the
  SQLite file under `TESTBED_HOME`) is migrated to head before serving.
- Limits: `--max-episodes` concurrent episodes (default 4), `--idle-timeout` seconds
  without a request before an episode is ended (default 900), `--step-timeout` seconds per
  command (default 300; a task's own lower limit wins).
- Fast reset (`--fast-reset`, the default; `--no-fast-reset` for cold episodes only): an
  episode starts from its task's saved post-setup state (see
  `testbed.server.envapi.backend`). `--fresh-states` removes every saved state at start.
  Saved states stay across restarts; `testbed state list|rm` shows and removes them.
- Bad options exit with status 2 before anything is opened.
"""

from __future__ import annotations

import secrets
import sys
from typing import Annotated, Any

import typer

from testbed.cli.bind import is_loopback
from testbed.cli.options import EXIT_INPUT, DbOption
from testbed.errors import InputError
from testbed.model.fields import positive_seconds
from testbed.model.task import TASK_ID_RE


def serve_command(
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")] = 8090,
    db: DbOption = None,
    token: Annotated[
        str | None,
        typer.Option("--token", envvar="TESTBED_ENV_TOKEN", help="Bearer token clients must send (default: random)."),
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="Default task for /reset bodies that name none.")] = None,
    max_episodes: Annotated[int, typer.Option("--max-episodes", help="Concurrent episodes (labs).")] = 4,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", help="Seconds idle before an episode ends.")] = 900,
    step_timeout: Annotated[float, typer.Option("--step-timeout", help="Seconds per command at most.")] = 300,
    fast_reset: Annotated[
        bool, typer.Option("--fast-reset/--no-fast-reset", help="Start episodes from saved post-setup states.")
    ] = True,
    fresh_states: Annotated[bool, typer.Option("--fresh-states", help="Remove every saved state first.")] = False,
    no_token: Annotated[
        bool, typer.Option("--no-token", help="Serve without a token (loopback addresses only).")
    ] = False,
) -> None:
    """Serve the environment API: episodes (reset/step/state) on real VMs, each recorded as a run."""
    try:
        if max_episodes < 1:
            raise InputError(None, "--max-episodes", "must be positive")
        positive_seconds(idle_timeout, "--idle-timeout")
        positive_seconds(step_timeout, "--step-timeout")
        check_token_options(host, token, no_token)
        from testbed.config import Settings, project_root
        from testbed.db.engine import open_database
        from testbed.server.envapi.app import create_app
        from testbed.server.envapi.backend import open_runner_manager

        Settings.from_env()  # every TESTBED_* setting, before the database is created
        _check_task(task)
        database = open_database(db)
        opener = open_runner_manager(
            database,
            project_root(),
            max_episodes=max_episodes,
            idle_timeout_s=idle_timeout,
            step_timeout_s=step_timeout,
            fast_reset=fast_reset,
            fresh_states=fresh_states,
        )
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_INPUT) from None
    if not token and not no_token:
        token = secrets.token_urlsafe(24)
        print(f"generated token: {token}", file=sys.stderr)
    _serve(create_app(opener, None if no_token else token, default_task=task), host, port, no_token=no_token)


def _check_task(task: str | None) -> None:
    """`InputError` unless `task` is None or names a task directory under tasks/."""
    from testbed.config import project_root

    if task is not None and not (TASK_ID_RE.match(task) and (project_root() / "tasks" / task / "task.toml").is_file()):
        raise InputError(None, "--task", f"no task '{task}' under {project_root() / 'tasks'}")


def _serve(app: Any, host: str, port: int, *, no_token: bool) -> None:
    """Announce the address on stderr and serve `app` with uvicorn until stopped."""
    import uvicorn

    from testbed.server.envapi.guard import MAX_BODY

    shown = f"[{host}]" if ":" in host else host
    needs = "no token (loopback only)" if no_token else "token required"
    print(f"testbed environment API on http://{shown}:{port}/ ({needs})", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, ws_max_size=MAX_BODY)


def check_token_options(host: str, token: str | None, no_token: bool) -> None:
    """`InputError` when `--no-token` is asked for off loopback, or together with a token."""
    if not no_token:
        return
    if token:
        raise InputError(None, "--no-token", "conflicts with --token / TESTBED_ENV_TOKEN")
    if not is_loopback(host):
        raise InputError(None, "--no-token", f"only on a loopback address (127.0.0.1, ::1, localhost), not {host!r}")


state_app = typer.Typer(help="Saved post-setup states of tasks (fast reset of `testbed serve`).", no_args_is_help=True)


@state_app.command("list")
def state_list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of lines.")] = False,
) -> None:
    """List saved states: task, key, size, the run that built it."""
    from testbed.config import Settings
    from testbed.hypervisor.slots import SlotStore
    from testbed.render.terminal import json_text

    infos = SlotStore(Settings.from_env()).list()
    if as_json:
        rows = [{"task": i.task, "key": i.key, "size_bytes": i.size_bytes,
                 "built_by_run": i.meta.built_by_run if i.meta else None,
                 "created_at": i.meta.created_at if i.meta else None} for i in infos]  # fmt: skip
        typer.echo(json_text(rows))
        return
    for info in infos:
        built = f"run {info.meta.built_by_run} at {info.meta.created_at}" if info.meta else "unreadable"
        print(f"{info.task}\t{info.key}\t{info.size_bytes / 2**20:.0f} MiB\t{built}")


@state_app.command("rm")
def state_rm_command(
    task: Annotated[str | None, typer.Argument(help="Only this task's states (default: all).")] = None,
) -> None:
    """Remove saved states and release their leases (waits for episodes restored from them)."""
    from testbed.config import Settings
    from testbed.hypervisor.slots import SlotStore

    for removed in SlotStore(Settings.from_env()).remove(task):
        print(f"removed {removed}")

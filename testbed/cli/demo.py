"""`testbed demo [--db URL]`: a database of realistic sample runs, for trying testbed
without VMs, root or libvirt (and `testbed dashboard --demo`, which serves one).

Contracts:

- `seed_demo_database(url)` fills the database at `url` (created and migrated when new) with
  the dashboard demo (`testbed.testing.demo.seed_demo`, finished runs only) and the
  model-evaluation demo (`testbed.testing.demo_models.seed_models`: LLM runs with their
  model turns, several agents, passes, failures and a harness error), written through the
  recorder the runner uses; it returns the number of runs. A database that already holds
  runs is refused (`InputError`, field `--db`): demo data never mixes with real runs.
- Without `--db` the database is a new SQLite file in a new temporary directory
  (`demo_url()`), left there for the user (the path is printed) — nothing under
  `TESTBED_HOME` is touched.
- `testbed demo` prints where the database is and the commands that read it, then exits 0.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy import func, select

from testbed.db.engine import database_url, open_database
from testbed.db.models import Run
from testbed.errors import InputError
from testbed.render.terminal import neutralise


def demo_url() -> str:
    """A new SQLite database in a new temporary directory."""
    directory = Path(tempfile.mkdtemp(prefix="testbed-demo-"))
    return f"sqlite:///{directory / 'testbed.db'}"


def seed_demo_database(url: str) -> int:
    """Write the demo runs into the database at `url` (see the module contract)."""
    from testbed.testing.demo import seed_demo  # test support: imported only when a demo is asked for
    from testbed.testing.demo_models import seed_models

    sessions = open_database(database_url(url))
    with sessions() as session:
        existing = int(session.scalar(select(func.count()).select_from(Run)) or 0)
    if existing:
        raise InputError(None, "--db", f"the database already holds {existing} run(s); give an empty one (or no --db)")
    seed_demo(sessions, unfinished=False)
    seed_models(sessions)
    with sessions() as session:
        total = int(session.scalar(select(func.count()).select_from(Run)) or 0)
    sessions.kw["bind"].dispose()
    return total


def demo_command(
    db: Annotated[
        str | None, typer.Option("--db", help="An empty database to fill (default: a new SQLite file in a temp dir).")
    ] = None,
) -> None:
    """Fill a database with realistic sample runs (LLM runs with their model turns, several
    agents, passes, failures, errors) and print where it is; no VM, root or libvirt needed."""
    url = db or demo_url()
    typer.echo("writing sample runs …", err=True)
    runs = seed_demo_database(url)
    shown = neutralise(url)
    typer.echo(f"demo database with {runs} runs: {shown}")
    typer.echo("look at it with:")
    for line in (
        f"testbed dashboard --db {shown}",
        f"testbed runs list --db {shown}",
        f"testbed runs list --db {shown} --agent openai:gpt-4.1-mini --json",
        f"testbed report --db {shown} --out report.html",
    ):
        typer.echo(f"  {line}")

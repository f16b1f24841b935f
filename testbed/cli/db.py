"""`testbed db upgrade|current`: the run database's schema.

`db upgrade` creates the database when it is new and migrates it to the newest schema;
`db current` prints its revision and the newest one available. Both take `--db URL` (else
env `TESTBED_DB`, else the SQLite file under `TESTBED_HOME`); the URL is printed with its
password hidden.
"""

from __future__ import annotations

import typer
from sqlalchemy.engine import make_url

from testbed.cli.options import DbOption
from testbed.db.engine import database_url
from testbed.db.migrate import current_revision, head_revision, upgrade

db_app = typer.Typer(help="Manage the run database.", no_args_is_help=True)


def _safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Migrate the run database to the newest schema and print its revision."""
    url = database_url(db)
    revision = upgrade(url)
    typer.echo(f"{_safe_url(url)}: at revision {revision}")


@db_app.command("current")
def db_current(db: DbOption = None) -> None:
    """Print the database's schema revision and the newest one available."""
    url = database_url(db)
    typer.echo(f"{_safe_url(url)}: at revision {current_revision(url) or '(none)'}; head is {head_revision()}")

"""Options and exit statuses shared by the command groups of `testbed.cli`.

`DbOption` is the `--db URL` option of every command that reads or writes the run database
(unset: env `TESTBED_DB`, else the SQLite file under `TESTBED_HOME`; resolved by
`testbed.db.engine.database_url`). `EXIT_INPUT` (2) is bad input, `EXIT_HARNESS` (3) a
harness error: the statuses `testbed.cli.main` maps `InputError` and `HarnessError` to.
"""

from __future__ import annotations

from typing import Annotated

import typer

EXIT_INPUT = 2
EXIT_HARNESS = 3

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME)."),
]

"""The run database: models, migrations, the per-run recorder, and queries.

Public API (see each module's docstring for its contract):

- `connect`: `database_url`, `make_engine`, `writer_engine`; `engine`: `open_database`
- `migrate`: `upgrade`, `current_revision`, `head_revision`, `migrations_dir`
- `recorder`: `RunRecorder`, `create_run`, `create_job`; `records.CommandRecord`
- `read`: the read model (`list_runs`, `run_detail`, `resolve_run_id`, `open_read_only`, …)
- `cli`: `db_app`, `runs_app` (Typer sub-apps)
"""

from __future__ import annotations

from testbed.db.connect import database_url, make_engine, writer_engine
from testbed.db.engine import open_database
from testbed.db.migrate import current_revision, head_revision, upgrade
from testbed.db.read import (
    AmbiguousRunId,
    RunDetail,
    RunNotFound,
    RunSummary,
    list_runs,
    resolve_run_id,
    run_detail,
)
from testbed.db.recorder import RunRecorder, create_job, create_run
from testbed.db.records import CommandRecord

__all__ = [
    "AmbiguousRunId",
    "CommandRecord",
    "RunDetail",
    "RunNotFound",
    "RunRecorder",
    "RunSummary",
    "create_job",
    "create_run",
    "current_revision",
    "database_url",
    "head_revision",
    "list_runs",
    "make_engine",
    "open_database",
    "resolve_run_id",
    "run_detail",
    "upgrade",
    "writer_engine",
]

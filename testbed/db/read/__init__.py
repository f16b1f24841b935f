"""The read side of the run database: the one read model of the CLI, the dashboard, the
export and the report.

Every function takes an open `Session` (or, where noted, a `Connection`), only SELECTs,
and returns plain dataclasses detached from the session (`jsonable.to_jsonable` turns any
of them into JSON). Modules, each one subject:

- `database`: `open_read_only` / `read_only_engine` — never create, migrate or write;
  `open_existing` — the same checks, then writable (rows that are there).
- `ids`: `resolve_run_id`, `resolve_job_id` — full id or literal prefix of 4+ characters.
- `filters`: `RunFilter` (which runs), `parse_since`, `make_filter`.
- `rates`: `OutcomeCounts`, `pass_rate`, `count_outcomes` — the one pass-rate definition —
  and its statistics (`wilson_interval`, `pass_at_k`).
- `runs`: `list_runs`, `run_detail`, `RunSummary`; `commands`, `findings`, `checks`,
  `snapshots` (including `residue_inputs` of a re-analysis), `jobs`: one table each.
- `runlist` and `overview`: the dashboard's runs list, overview and tasks.
- `figures`: the study's figures for the report.
- `turns`: model turns of LLM agents; `trajectory`: a run's one time-ordered stream of
  turns and the commands they ran, with the changes and findings each command explains
  (rendered by `runs show`, the run page and the API); `compare`: two runs side by side.
- `leaderboard`: agents compared (pass rate with Wilson interval, pass@k, error, residue
  and high-impact rates, agent time, tokens and cost per solved task), per category and
  release; `tasks`: a task as its runs recorded it, its versions and their diffs.
"""

from __future__ import annotations

from testbed.db.read.database import open_existing, open_read_only, read_only_engine
from testbed.db.read.filters import RunFilter, make_filter, parse_since
from testbed.db.read.ids import (
    MIN_PREFIX,
    AmbiguousId,
    AmbiguousRunId,
    IdNotFound,
    RunNotFound,
    resolve_job_id,
    resolve_run_id,
)
from testbed.db.read.jsonable import to_jsonable
from testbed.db.read.rates import OutcomeCounts, pass_rate
from testbed.db.read.runs import RunDetail, RunSummary, list_runs, run_detail
from testbed.db.read.snapshots import residue_inputs

__all__ = [
    "MIN_PREFIX",
    "AmbiguousId",
    "AmbiguousRunId",
    "IdNotFound",
    "OutcomeCounts",
    "RunDetail",
    "RunFilter",
    "RunNotFound",
    "RunSummary",
    "list_runs",
    "make_filter",
    "open_existing",
    "open_read_only",
    "parse_since",
    "pass_rate",
    "read_only_engine",
    "residue_inputs",
    "resolve_job_id",
    "resolve_run_id",
    "run_detail",
    "to_jsonable",
]

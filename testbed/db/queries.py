"""Former home of the read-side queries; they live in `testbed.db.read` now.

Kept so that callers not yet moved keep working; new code imports `testbed.db.read`.
"""

from __future__ import annotations

from testbed.db.read.ids import MIN_PREFIX, AmbiguousRunId, RunNotFound, resolve_run_id
from testbed.db.read.runs import RunDetail, RunSummary, list_runs, run_detail

__all__ = ["MIN_PREFIX", "AmbiguousRunId", "RunDetail", "RunNotFound", "RunSummary", "list_runs", "resolve_run_id",
           "run_detail"]  # fmt: skip

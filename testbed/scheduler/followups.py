"""The retry rule: which follow-up run a finished run's cell needs.

A retry is a new run row of the same cell (task, variant, attempt, seed); harness errors are
retried while `retry < limit`, a run cancelled by a coordinator shutting down is replaced with
the same `retry`, and nothing follows a run of a cancelled job (`testbed.scheduler.store`
states the whole contract).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from testbed.model.job import RetryPolicy


@dataclass(frozen=True)
class CellRow:
    """The fields of a run that the follow-up rule reads."""

    run_id: str
    task_id: str
    image: str
    agent: str
    attempt: int
    retry: int
    state: str
    outcome: str | None
    created_at: datetime
    retry_of: str | None
    seed: int | None = None


def follow_up_of(outcome: str, retry: int, policy: RetryPolicy, job_cancelled: bool) -> tuple[int, float] | None:
    """The follow-up a finished run's cell needs: (retry number, delay in s), or None."""
    if job_cancelled:
        return None
    if outcome == "error" and retry < policy.limit:
        return retry + 1, policy.delay(retry + 1)
    if outcome == "cancelled":
        return retry, 0.0
    return None


def cells_needing_follow_up(rows: Iterable[CellRow]) -> list[CellRow]:
    """The latest run of every cell whose runs are all finished and whose latest run has
    no follow-up yet (candidates for `follow_up_of`)."""
    cells: dict[tuple[str, str, int, int | None], list[CellRow]] = {}
    for row in rows:
        cells.setdefault((row.task_id, row.image, row.attempt, row.seed), []).append(row)
    found: list[CellRow] = []
    for members in cells.values():
        if any(m.state != "finished" for m in members):
            continue
        replaced = {m.retry_of for m in members if m.retry_of}
        latest = [m for m in members if m.run_id not in replaced]
        if not latest:
            continue
        found.append(max(latest, key=lambda m: (m.created_at, m.retry)))
    return found

"""The retry rule: which follow-up a finished run's cell needs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from testbed.model.job import RetryPolicy
from testbed.scheduler.followups import CellRow, cells_needing_follow_up, follow_up_of


def test_errors_retry_until_the_limit_failures_and_passes_are_final() -> None:
    policy = RetryPolicy(limit=2)
    assert follow_up_of("error", 0, policy, job_cancelled=False) == (1, policy.delay(1))
    assert follow_up_of("error", 2, policy, job_cancelled=False) is None
    assert follow_up_of("failed", 0, policy, job_cancelled=False) is None
    assert follow_up_of("passed", 0, policy, job_cancelled=False) is None
    assert follow_up_of("cancelled", 1, policy, job_cancelled=False) == (1, 0.0)
    assert follow_up_of("error", 0, policy, job_cancelled=True) is None


def _row(run_id: str, *, retry: int = 0, state: str = "finished", retry_of: str | None = None, at: int = 0) -> CellRow:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    return CellRow(run_id, "t", "debian-12", "a", 1, retry, state, "error", t0 + timedelta(seconds=at), retry_of)


def test_only_the_latest_run_of_a_finished_cell_without_follow_up_is_a_candidate() -> None:
    first, retried = _row("r1"), _row("r2", retry=1, retry_of="r1", at=1)
    assert cells_needing_follow_up([first, retried]) == [retried]
    assert cells_needing_follow_up([first, _row("r2", retry=1, retry_of="r1", state="running", at=1)]) == []

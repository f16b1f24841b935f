"""`testbed.db.read.rates`: the one pass-rate definition and the grouped outcome count."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from testbed.db.models import Run
from testbed.db.read.filters import RunFilter
from testbed.db.read.rates import (
    OutcomeCounts,
    Share,
    count_outcomes,
    fold,
    pass_rate,
    pass_rates_by_category,
    rate,
)
from tests.unit.db.conftest import Seeder


def test_pass_rate_leaves_harness_errors_out() -> None:
    assert pass_rate(2, 1) == 2 / 3 and pass_rate(0, 0) is None and rate(1, 0) is None
    counts = OutcomeCounts("x")
    for outcome, n in (("passed", 2), ("failed", 1), ("error", 5), ("cancelled", 1), (None, 3)):
        counts.add(outcome, n)
    assert (counts.total, counts.done, counts.unfinished, counts.pass_rate) == (12, 9, 3, 0.6667)
    merged = OutcomeCounts("y")
    merged.merge(counts)
    merged.merge(counts)
    assert (merged.total, merged.error, merged.pass_rate) == (24, 10, 0.6667)
    assert Share.of(1, 3) == Share(1, 3, 0.3333) and Share.of(0, 0).share is None


def test_count_outcomes_and_pass_rates_by_category(sessions: sessionmaker[Session], seed: Seeder) -> None:
    for category, outcome in (("web", "passed"), ("web", "failed"), ("web", "error"), ("web", None),
                              (None, "cancelled"), ("db", "passed")):  # fmt: skip
        seed.run(category=category, outcome=outcome)
    with sessions() as s:
        groups = fold(count_outcomes(s, Run.task_category), label="(none)")
        rows = pass_rates_by_category(s, RunFilter())
    assert (groups["web"].total, groups["web"].pass_rate, groups["(none)"].cancelled) == (4, 0.5, 1)
    assert [(r.category, r.runs, r.passed, r.failed, r.error, r.cancelled, r.pass_rate) for r in rows] == [
        ("(unknown)", 1, 0, 0, 0, 1, None),
        ("db", 1, 1, 0, 0, 0, 1.0),
        ("web", 3, 1, 1, 1, 0, 0.5),  # the unfinished run is not counted
    ]

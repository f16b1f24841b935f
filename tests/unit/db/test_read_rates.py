"""`testbed.db.read.rates`: the one pass-rate definition and the grouped outcome count."""

from __future__ import annotations

import pytest
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


def test_wilson_interval_against_known_values() -> None:
    from testbed.db.read.rates import wilson_interval

    def rounded(passed: int, n: int) -> tuple[float, float]:
        interval = wilson_interval(passed, n)
        assert interval is not None
        return round(interval[0], 4), round(interval[1], 4)

    assert rounded(8, 10) == (0.4902, 0.9433)  # Wilson (1927); Newcombe (1998), table I
    assert rounded(0, 10) == (0.0, 0.2775)
    assert rounded(10, 10) == (0.7225, 1.0)
    assert rounded(81, 263) == (0.2553, 0.3662)  # Newcombe (1998) example: 81/263
    assert wilson_interval(0, 0) is None
    low, high = wilson_interval(1, 2, z=1.0) or (0.0, 0.0)
    # z = 1, 1 of 2: centre (0.5 + 1/4) / 1.5 = 0.5, half sqrt(1/8 + 1/16) / 1.5 = 0.2887
    assert (round(low, 4), round(high, 4)) == (0.2113, 0.7887)


def test_pass_at_k_unbiased_estimator() -> None:
    from testbed.db.read.rates import mean_pass_at_k, pass_at_k

    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert pass_at_k(10, 8, 5) == 1.0  # fewer than k failures: some k-subset always passes
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(2, 1, 2) == 1.0
    assert pass_at_k(1, 1, 2) is None and pass_at_k(3, 1, 0) is None
    # Averaged over the cells that have at least k attempts: the (1, 0) cell has too few for k = 2.
    assert mean_pass_at_k([(2, 1), (4, 0), (1, 0)], 2) == (1.0 + 0.0) / 2
    assert mean_pass_at_k([(2, 1), (4, 1), (1, 0)], 1) == pytest.approx((0.5 + 0.25 + 0.0) / 3)
    assert mean_pass_at_k([(1, 1)], 2) is None

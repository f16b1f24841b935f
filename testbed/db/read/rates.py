"""Runs counted by outcome, and the rates derived from those counts: the one definition of
a pass rate.

Contracts:

- Pass rate = passed / (passed + failed): a harness error is never an agent failure, so
  `error`, `cancelled` and unfinished runs are left out. None when no run is decided.
  `rate(part, whole)` is None when `whole` is 0.
- `OutcomeCounts` counts one group's runs by outcome (`unfinished`: no outcome yet) and
  keeps its `pass_rate` rounded to `RATE_DIGITS` (the dashboard shows and serves these);
  `Share` is `part` of `whole` runs, rounded the same way.
- `count_outcomes(db, *keys, where=...)` is the grouped count every view folds into its
  groups: rows `(key..., outcome, n)` over the runs matching `where`. `db` is a `Session`
  or a `Connection` (the export reads inside its own transaction).
- `pass_rates_by_category` is the report's table: per `runs.task_category` (NULL →
  `UNKNOWN`) over FINISHED runs only, sorted by category; its rate is not rounded.
- `wilson_interval(passed, n)` is the Wilson score interval of a pass rate (95 % by
  default, z = 1.95996…), (low, high) within [0, 1]; None when `n` is 0.
- `pass_at_k(n, c, k)` is the unbiased estimator of pass@k (Chen et al. 2021) of one
  matrix cell with `n` decided attempts of which `c` passed: 1 - C(n-c, k) / C(n, k);
  None when `n < k`. `mean_pass_at_k(cells, k)` averages it over the cells that have at
  least `k` attempts (None when none has).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, select
from sqlalchemy.orm import Session

from testbed.db.models import OUTCOMES, Run
from testbed.db.read.filters import UNFINISHED, RunFilter

RATE_DIGITS = 4
"""Decimals kept in the rates of `OutcomeCounts` and `Share`."""

UNKNOWN = "(unknown)"
"""Label of a missing category or OS release."""

Z_95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95 % interval."""


def rate(part: int, whole: int) -> float | None:
    """`part / whole`, None when `whole` is 0."""
    return part / whole if whole else None


def pass_rate(passed: int, failed: int) -> float | None:
    """passed / (passed + failed) (see the module contract)."""
    return rate(passed, passed + failed)


def wilson_interval(passed: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of `passed` out of `n` (see the module contract)."""
    if n <= 0:
        return None
    p = passed / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k of one cell: `n` attempts, `c` passed (see the module contract)."""
    if k < 1 or n < k:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(cells: Iterable[tuple[int, int]], k: int) -> float | None:
    """pass@k averaged over the `(n, c)` cells with at least `k` attempts."""
    values = [v for n, c in cells if (v := pass_at_k(n, c, k)) is not None]
    return sum(values) / len(values) if values else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, RATE_DIGITS)


@dataclass
class OutcomeCounts:
    """Runs of one group (`key`) counted by outcome; `pass_rate` per the module contract."""

    key: str
    total: int = 0
    passed: int = 0
    failed: int = 0
    error: int = 0
    cancelled: int = 0
    unfinished: int = 0
    pass_rate: float | None = None

    def add(self, outcome: str | None, n: int) -> None:
        """Count `n` runs with `outcome` (None: unfinished) and refresh `pass_rate`."""
        self.total += n
        name = outcome if outcome in OUTCOMES else UNFINISHED
        setattr(self, name, getattr(self, name) + n)
        self.pass_rate = _rounded(pass_rate(self.passed, self.failed))

    def merge(self, other: OutcomeCounts) -> None:
        """Add every count of `other` to this one."""
        for name in (*OUTCOMES, UNFINISHED):
            self.add(None if name == UNFINISHED else name, getattr(other, name))

    @property
    def done(self) -> int:
        """Runs that have an outcome."""
        return self.total - self.unfinished


@dataclass
class Share:
    """`part` of `whole` runs; `share` is None when `whole` is 0."""

    part: int
    whole: int
    share: float | None

    @classmethod
    def of(cls, part: int, whole: int) -> Share:
        """The share `part / whole`, rounded per the module contract."""
        return cls(part, whole, _rounded(rate(part, whole)))


def count_outcomes(
    db: Session | Connection, *keys: Any, where: Sequence[ColumnElement[bool]] = ()
) -> list[tuple[Any, ...]]:
    """Rows `(key..., outcome, n)`: the runs matching `where`, grouped by `keys` and outcome."""
    stmt = select(*keys, Run.outcome, func.count()).where(*where).group_by(*keys, Run.outcome)
    return [tuple(row) for row in db.execute(stmt)]


def fold(rows: Iterable[tuple[Any, ...]], label: str = "(none)") -> dict[str, OutcomeCounts]:
    """`count_outcomes` rows with ONE key folded into counts per key (None → `label`)."""
    groups: dict[str, OutcomeCounts] = {}
    for key, outcome, n in rows:
        name = label if key is None else str(key)
        groups.setdefault(name, OutcomeCounts(name)).add(outcome, n)
    return groups


@dataclass(frozen=True)
class CategoryPassRate:
    """Outcomes of the finished runs of one task category."""

    category: str
    runs: int
    passed: int
    failed: int
    error: int
    cancelled: int
    pass_rate: float | None
    """passed / (passed + failed)."""


def pass_rates_by_category(db: Session | Connection, selection: RunFilter) -> list[CategoryPassRate]:
    """Outcomes and pass rate per task category, sorted by category (see the contract)."""
    rows = count_outcomes(db, Run.task_category, where=[*selection.where(), Run.outcome.is_not(None)])
    groups = fold(rows, UNKNOWN)
    return [
        CategoryPassRate(
            category=key,
            runs=c.done,
            passed=c.passed,
            failed=c.failed,
            error=c.error,
            cancelled=c.cancelled,
            pass_rate=pass_rate(c.passed, c.failed),
        )
        for key, c in sorted(groups.items())
    ]

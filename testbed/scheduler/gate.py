"""Promotion gates over a finished job: `testbed gate JOB --min-pass R --min-category R
--max-error-rate R`.

The numbers are the job's final runs (the last run of every matrix cell, retries
resolved; `testbed.db.read.jobs.final_counts_by_category`), with the one pass-rate
definition of the read model: passed / (passed + failed).

Rules, all fail-closed:
- `min_pass`: the job's pass rate is at least R;
- `min_category`: every task category's pass rate is at least R (a category with no
  decided run — all errors — has no rate and fails);
- `max_error_rate`: error / (passed + failed + error) is at most R (harness errors are
  not the agent's failures, but a gate cannot promote on runs that never judged it);
- a job with unfinished or cancelled final runs fails: it was not measured whole.

Verdict (`GateResult.status`): 0 every given rule holds; 1 a rule does not hold; 3 no
data (no final run with an outcome of passed, failed or error). Bad input (no rule given,
a rate outside 0..1, an unknown job) is an `InputError` (2) before anything is judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testbed.db.read.rates import OutcomeCounts, pass_rate, rate
from testbed.errors import InputError

PASS, FAIL, NO_DATA = 0, 1, 3


@dataclass(frozen=True)
class GateRules:
    min_pass: float | None = None
    min_category: float | None = None
    max_error_rate: float | None = None

    def __post_init__(self) -> None:
        given = {"--min-pass": self.min_pass, "--min-category": self.min_category,
                 "--max-error-rate": self.max_error_rate}  # fmt: skip
        if all(v is None for v in given.values()):
            raise InputError(None, "rules", "give at least one of --min-pass, --min-category, --max-error-rate")
        for flag, value in given.items():
            if value is not None and not 0.0 <= value <= 1.0:
                raise InputError(None, flag, f"{value} is not a rate between 0 and 1")


@dataclass(frozen=True)
class RuleVerdict:
    rule: str
    holds: bool
    detail: str


@dataclass
class GateResult:
    status: int
    verdicts: list[RuleVerdict] = field(default_factory=list)
    categories: dict[str, OutcomeCounts] = field(default_factory=dict)
    total: OutcomeCounts = field(default_factory=lambda: OutcomeCounts("all"))

    @property
    def passed(self) -> bool:
        return self.status == PASS


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def _floor(rule: str, counts: OutcomeCounts, floor: float) -> RuleVerdict:
    """Whether the pass rate of `counts` is at least `floor` (no decided run: it is not)."""
    value = pass_rate(counts.passed, counts.failed)
    detail = f"pass rate {_fmt(value)} ({counts.passed}/{counts.passed + counts.failed})"
    return RuleVerdict(rule, value is not None and value >= floor, detail)


def evaluate(categories: dict[str, OutcomeCounts], rules: GateRules) -> GateResult:
    """The gate's verdict over final runs counted per category (see the module docstring)."""
    total = OutcomeCounts("all")
    for counts in categories.values():
        total.merge(counts)
    result = GateResult(NO_DATA, [], dict(sorted(categories.items())), total)
    judged = total.passed + total.failed + total.error
    if judged == 0:
        return result
    verdicts = result.verdicts
    incomplete = total.unfinished + total.cancelled
    verdicts.append(RuleVerdict("complete", incomplete == 0, f"{incomplete} final run(s) unfinished or cancelled"
                                if incomplete else f"{total.total} final run(s), all finished"))  # fmt: skip
    if rules.min_pass is not None:
        verdicts.append(_floor(f"min-pass {rules.min_pass:g}", total, rules.min_pass))
    if rules.min_category is not None:
        for name, counts in result.categories.items():
            verdicts.append(_floor(f"min-category {rules.min_category:g}: {name}", counts, rules.min_category))
    if rules.max_error_rate is not None:
        errors = rate(total.error, judged)
        verdicts.append(RuleVerdict(f"max-error-rate {rules.max_error_rate:g}",
                                    errors is not None and errors <= rules.max_error_rate,
                                    f"error rate {_fmt(errors)} ({total.error}/{judged})"))  # fmt: skip
    result.status = PASS if all(v.holds for v in verdicts) else FAIL
    return result

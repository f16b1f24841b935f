"""`testbed.scheduler.validation_audit`: which cells of the library the report does not hold
as current and ok."""

from __future__ import annotations

from testbed.scheduler.validation import Row
from testbed.scheduler.validation_audit import Gap, GapKind, audit, summary


def _row(task: str, release: str, commit: str, verdict: str = "ok") -> Row:
    oracle = "passed" if verdict == "ok" else "failed"
    return Row(task, release, oracle, "1m", "no", "failed", "1m", verdict, commit, "2026-12-04", "")


def test_each_kind_of_gap_is_found_and_current_rows_are_not() -> None:
    declared = {"alpha": ["debian-12", "debian-13"], "beta": ["debian-12"], "gamma": ["debian-11"]}
    rows = [
        _row("alpha", "debian-12", "aaaaaaa"),  # current
        _row("alpha", "debian-13", "bbbbbbb+dirty"),  # alpha changed after bbbbbbb
        _row("beta", "debian-12", "ccccccc", verdict="PROBLEM"),
        _row("beta", "debian-11", "aaaaaaa"),  # a release beta dropped
        _row("retired", "debian-12", "aaaaaaa"),  # a task that is gone
        # gamma on debian-11: no row
    ]
    changes_after = {("alpha", "bbbbbbb")}

    def changed_since(task: str, commit: str) -> bool | None:
        return (task, commit) in changes_after

    gaps = audit(rows, declared, changed_since)
    assert [(g.task, g.release, g.kind) for g in gaps] == [
        ("alpha", "debian-13", GapKind.STALE),
        ("beta", "debian-11", GapKind.UNDECLARED),
        ("beta", "debian-12", GapKind.PROBLEM),
        ("gamma", "debian-11", GapKind.MISSING),
        ("retired", "debian-12", GapKind.UNDECLARED),
    ]
    assert "changed after bbbbbbb" in gaps[0].detail  # judged by the base of a +dirty commit
    assert "release" in gaps[1].detail and "task" in gaps[4].detail
    assert (
        summary(gaps, cells=4) == "1 of 4 declared cells current and ok (1 missing, 1 problem, 1 stale, 2 undeclared)"
    )


def test_a_commit_outside_the_history_is_stale_and_a_clean_report_has_no_gaps() -> None:
    declared = {"alpha": ["debian-12"]}
    unknown = audit([_row("alpha", "debian-12", "unknown")], declared, lambda t, c: False)
    assert [g.kind for g in unknown] == [GapKind.STALE]
    lost = audit([_row("alpha", "debian-12", "1234567")], declared, lambda t, c: None)
    assert lost == [Gap("alpha", "debian-12", GapKind.STALE, "commit 1234567 is not in this history")]
    assert audit([_row("alpha", "debian-12", "1234567")], declared, lambda t, c: False) == []
    assert summary([], cells=1) == "1 of 1 declared cells current and ok"

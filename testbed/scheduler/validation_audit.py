"""Whether tasks/VALIDATION.md is current: which cells of the library the report does not
hold as `ok` for the task's present files (`scripts/validate-tasks --audit`).

The report is written piecewise — a run over a subset replaces only its own rows — so its
rows carry different commits. A row still speaks for its cell while the task's directory is
unchanged since that commit; once the task changed, the row describes a task that no longer
exists. `audit(rows, declared, changed_since)` finds, per (task, release):

- `missing`: the library declares the cell and the report has no row for it;
- `problem`: the row's verdict is not `ok`;
- `stale`: the row is `ok` but the task's files changed after the row's commit
  (`changed_since(task, commit)` is True), or the commit is not in this history
  (`changed_since` returns None: nothing can be said about it);
- `undeclared`: a row for a task or release the library no longer declares.

A `+dirty` row (validated from a checkout with uncommitted changes under tasks/ or
testbed/) is judged by its base commit: the uncommitted task changes, once committed,
are themselves a change after it and make it stale. Product code (testbed/) changing
after a row does not make it stale: the audit answers "was this task, as it is, validated",
and the CI smoke set re-validates the engine on every change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from testbed.scheduler.validation import Row


class GapKind(StrEnum):
    MISSING = "missing"
    PROBLEM = "problem"
    STALE = "stale"
    UNDECLARED = "undeclared"


@dataclass(frozen=True)
class Gap:
    """One cell the report does not hold as current and ok."""

    task: str
    release: str
    kind: GapKind
    detail: str

    def line(self) -> str:
        return f"{self.kind:<10} {self.task} on {self.release}: {self.detail}"


ChangedSince = Callable[[str, str], bool | None]
"""`changed_since(task, commit)`: True when the task's files changed after `commit`, False
when not, None when `commit` is not in the history."""


def audit(rows: Sequence[Row], declared: Mapping[str, Sequence[str]], changed_since: ChangedSince) -> list[Gap]:
    """The gaps of the report `rows` against the library's `declared` releases per task,
    ordered by task, release (see the module docstring for each kind)."""
    by_key = {row.key: row for row in rows}
    gaps: list[Gap] = []
    for task, releases in declared.items():
        for release in releases:
            row = by_key.get((task, release))
            if row is None:
                gaps.append(Gap(task, release, GapKind.MISSING, "declared, never validated"))
            elif row.verdict != "ok":
                gaps.append(
                    Gap(task, release, GapKind.PROBLEM, f"oracle {row.oracle}, noop {row.noop} at {row.commit}")
                )
            else:
                gap = _staleness(row, changed_since)
                if gap is not None:
                    gaps.append(gap)
    for row in by_key.values():
        if row.release not in declared.get(row.task, ()):
            what = "task" if row.task not in declared else "release"
            gaps.append(Gap(row.task, row.release, GapKind.UNDECLARED, f"the library no longer declares this {what}"))
    return sorted(gaps, key=lambda g: (g.task, g.release))


def _staleness(row: Row, changed_since: ChangedSince) -> Gap | None:
    base = row.commit.removesuffix("+dirty")
    changed = changed_since(row.task, base) if base and base != "unknown" else None
    if changed is None:
        return Gap(row.task, row.release, GapKind.STALE, f"commit {row.commit or '(none)'} is not in this history")
    if changed:
        return Gap(row.task, row.release, GapKind.STALE, f"tasks/{row.task} changed after {base}")
    return None


def summary(gaps: Sequence[Gap], cells: int) -> str:
    """One line: how many of the declared `cells` are current and ok, and the gaps by kind."""
    counted = {kind: sum(g.kind == kind for g in gaps) for kind in GapKind}
    declared_gaps = sum(n for kind, n in counted.items() if kind != GapKind.UNDECLARED)
    parts = ", ".join(f"{n} {kind}" for kind, n in counted.items() if n)
    return f"{cells - declared_gaps} of {cells} declared cells current and ok" + (f" ({parts})" if parts else "")

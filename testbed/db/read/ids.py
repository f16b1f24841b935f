"""Naming a run or a job by its id or a prefix of it: the one resolver of every command.

Contracts:

- A reference is its full id, or a prefix of at least `MIN_PREFIX` characters, compared
  case-insensitively after stripping blanks, and matched LITERALLY: `%` and `_` are plain
  characters (SQL LIKE wildcards are escaped), so `jobs cancel %` matches nothing.
- Unknown → `IdNotFound` (`RunNotFound` for runs); several matches → `AmbiguousId`
  (`AmbiguousRunId`), whose message names the candidates (at most `MAX_LISTED`, each cut
  to the shortest length, 8 at least, that tells them apart); too short → `InputError`.
  All are `InputError`s: exit status 2 on the CLI, 404 / 400 on the dashboard.
- `field` names the argument or option in the message (`run id`, `--job`, `JOB_ID`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import InstrumentedAttribute, Session

from testbed.db.models import Job, Run
from testbed.errors import InputError

MIN_PREFIX = 4
"""Shortest id prefix accepted."""

MAX_LISTED = 5
"""Candidates named when a prefix is ambiguous."""


class IdNotFound(InputError):
    """No run or job matches the reference."""

    def __init__(self, what: str, field: str, ref: str) -> None:
        super().__init__(None, field, f"no {what} matches {ref!r}")


class AmbiguousId(InputError):
    """Several runs or jobs match the prefix; `matches` holds the candidates shown."""

    def __init__(self, what: str, field: str, ref: str, matches: list[str], more: bool) -> None:
        self.matches = matches
        listed = ", ".join(matches) + (", …" if more else "")
        super().__init__(None, field, f"{ref!r} matches several {what}s ({listed}); give more characters")


class RunNotFound(IdNotFound):
    """No run matches the reference."""

    def __init__(self, ref: str, field: str = "run id") -> None:
        super().__init__("run", field, ref)


class AmbiguousRunId(AmbiguousId):
    """Several runs match the prefix."""

    def __init__(self, ref: str, matches: list[str], more: bool = False, field: str = "run id") -> None:
        super().__init__("run", field, ref, matches, more)


def distinct_prefixes(ids: list[str], shortest: int = 8) -> list[str]:
    """`ids` cut to the shortest common length (at least `shortest`) that keeps them apart."""
    width = shortest
    longest = max((len(i) for i in ids), default=0)
    while width < longest and len({i[:width] for i in ids}) < len(ids):
        width += 1
    return [i[:width] for i in ids]


def _resolve(session: Session, column: InstrumentedAttribute[Any], ref: str, what: str, field: str) -> str:
    """The full id in `column` named by `ref` (errors as the module contract says)."""
    ref = ref.strip().lower()
    if ref and session.scalar(select(column).where(column == ref)) is not None:
        return ref
    if len(ref) < MIN_PREFIX:
        raise InputError(None, field, f"{ref!r} is too short: give at least {MIN_PREFIX} characters of the {what} id")
    stmt = select(column).where(column.startswith(ref, autoescape=True)).order_by(column).limit(MAX_LISTED + 1)
    matches = [str(m) for m in session.scalars(stmt)]
    if not matches:
        raise RunNotFound(ref, field) if what == "run" else IdNotFound(what, field, ref)
    if len(matches) > 1:
        shown = distinct_prefixes(matches[:MAX_LISTED])
        more = len(matches) > MAX_LISTED
        if what == "run":
            raise AmbiguousRunId(ref, shown, more, field)
        raise AmbiguousId(what, field, ref, shown, more)
    return matches[0]


def resolve_run_id(session: Session, ref: str, field: str = "run id") -> str:
    """The full id of the run named by `ref` (see the module contract)."""
    return _resolve(session, Run.id, ref, "run", field)


def resolve_job_id(session: Session, ref: str, field: str = "job id") -> str:
    """The full id of the job named by `ref` (see the module contract)."""
    return _resolve(session, Job.id, ref, "job", field)

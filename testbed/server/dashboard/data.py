"""Read-only queries behind the dashboard pages and its JSON API.

Contracts:

- Every function takes an open `Session` and only reads (SELECT); results are plain
  dataclasses detached from the session. `to_jsonable()` turns any of them into JSON-ready
  data (datetimes as ISO 8601 strings in UTC).
- By OS, a run counts once under each distinct `nodes.os_release` of its nodes (NULLs
  ignored); runs with no known release count under `(unknown)`.
- Pass rate = passed / (passed + failed): harness errors are never counted as agent
  failures (DESIGN.md, "Run lifecycle"), so `error`, `cancelled` and unfinished runs are
  left out. None when no run is decided.
- Residue share = runs with `residue = 'yes'` / runs whose residue is decided (`yes` or
  `no`). High-impact share = runs with at least one command whose `impact` list is
  non-empty / all runs. The high-impact count reads the partial index
  `ix_commands_impactful` (migration 0002), so it costs O(impactful commands), not
  O(commands); the predicate below must stay textually identical to the index's.
- `RunFilter.parse` validates the query string of the runs list and raises `InputError`
  (HTTP 400) on a bad value; `runs_page` pages with LIMIT/OFFSET.
- `run_page` loads one page of the run's commands with outputs cut to `PREVIEW_CHARS`
  (their full length reported), and computes per-node snapshot differences with
  `testbed.probes.diff.diff_snapshots` for the consecutive pairs of `SNAPSHOT_POINTS`
  that both exist.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, exists, func, literal_column, or_, select, text
from sqlalchemy.orm import Session

from testbed.db.models import OUTCOMES, SNAPSHOT_POINTS, Check, Command, Finding, Job, Node, Phase, Run, Snapshot
from testbed.db.queries import RunSummary, resolve_run_id
from testbed.errors import InputError
from testbed.probes.diff import ProbeDiff, diff_snapshots

PREVIEW_CHARS = 4000
"""Characters of stdout/stderr (and of the command text) shown inline on the run page."""

COMMAND_PAGE_SIZE = 250
"""Commands per page of a run's command log."""

MAX_PAGE_SIZE = 500
"""Largest accepted page size of the runs list."""

SORT_KEYS: tuple[str, ...] = ("started", "duration", "task", "outcome")
"""Sort keys of the runs list."""

OUTCOME_FILTERS: tuple[str, ...] = (*OUTCOMES, "unfinished")
"""Accepted values of the runs list's `outcome` filter (`unfinished`: no outcome yet)."""

DIFF_PAIRS: tuple[tuple[str, str], ...] = tuple(itertools.pairwise(SNAPSHOT_POINTS))
"""Consecutive snapshot points compared on the run page."""

_IMPACTFUL_SQL = {
    "sqlite": "commands.impact != '[]'",
    "postgresql": "commands.impact <> '[]'::jsonb",
}
"""`commands.impact` is a non-empty list; identical to the WHERE of `ix_commands_impactful`."""


def to_jsonable(value: Any) -> Any:
    """JSON-ready copy of `value` (dataclasses, dicts, lists, datetimes, ProbeDiffs)."""
    if isinstance(value, ProbeDiff):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def impactful_clause(session: Session) -> ColumnElement[bool]:
    """SQL predicate: the command's `impact` list is non-empty (index-friendly literal)."""
    dialect = session.get_bind().dialect.name
    return text(_IMPACTFUL_SQL.get(dialect, _IMPACTFUL_SQL["sqlite"]))  # type: ignore[return-value]


def _rate(passed: int, decided: int) -> float | None:
    return round(passed / decided, 4) if decided else None


# --- overview ------------------------------------------------------------------------------


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
        name = outcome if outcome in OUTCOMES else "unfinished"
        setattr(self, name, getattr(self, name) + n)
        self.pass_rate = _rate(self.passed, self.passed + self.failed)


@dataclass
class JobProgress:
    """A job and its runs by state (unfinished ones) and by outcome (finished ones)."""

    id: str
    name: str
    created_at: datetime
    counts: OutcomeCounts
    states: dict[str, int]

    @property
    def done(self) -> int:
        """Runs that have an outcome."""
        return self.counts.total - self.counts.unfinished


@dataclass
class Share:
    """`part` of `whole` runs; `share` is None when `whole` is 0."""

    part: int
    whole: int
    share: float | None


@dataclass
class Overview:
    """Everything on the overview page (`/`, `/api/overview`)."""

    totals: OutcomeCounts
    by_category: list[OutcomeCounts]
    by_os: list[OutcomeCounts]
    by_agent: list[OutcomeCounts]
    by_image: list[OutcomeCounts]
    residue: Share
    residue_undetermined: int
    high_impact: Share
    jobs: list[JobProgress]
    unfinished: int
    generated_at: datetime


def overview(session: Session, *, max_jobs: int = 20) -> Overview:
    """Totals, pass rates by category / OS / agent / image, residue and high-impact shares, and the
    newest `max_jobs` jobs with their progress."""
    totals = OutcomeCounts("all")
    cats: dict[str, OutcomeCounts] = {}
    agents: dict[str, OutcomeCounts] = {}
    images: dict[str, OutcomeCounts] = {}
    residue: dict[str | None, int] = defaultdict(int)
    rows = session.execute(
        select(Run.task_category, Run.agent, Run.image, Run.outcome, Run.residue, func.count()).group_by(
            Run.task_category, Run.agent, Run.image, Run.outcome, Run.residue
        )
    )
    for category, agent, image, outcome, res, n in rows:
        totals.add(outcome, n)
        cats.setdefault(category or "(none)", OutcomeCounts(category or "(none)")).add(outcome, n)
        agents.setdefault(agent, OutcomeCounts(agent)).add(outcome, n)
        images.setdefault(image or "(none)", OutcomeCounts(image or "(none)")).add(outcome, n)
        residue[res] += n

    by_os: dict[str, OutcomeCounts] = {}
    os_rows = session.execute(
        select(Node.os_release, Run.outcome, func.count(func.distinct(Run.id)))
        .join(Run, Run.id == Node.run_id)
        .where(Node.os_release.is_not(None))
        .group_by(Node.os_release, Run.outcome)
    )
    for os_release, outcome, n in os_rows:
        key = str(os_release)
        by_os.setdefault(key, OutcomeCounts(key)).add(outcome, n)
    known_os = exists().where(Node.run_id == Run.id, Node.os_release.is_not(None))
    for outcome, n in session.execute(select(Run.outcome, func.count()).where(~known_os).group_by(Run.outcome)):
        by_os.setdefault("(unknown)", OutcomeCounts("(unknown)")).add(outcome, n)

    impactful = session.scalar(
        select(func.count(func.distinct(Command.run_id))).select_from(Command).where(impactful_clause(session))
    )
    decided = residue["yes"] + residue["no"]

    jobs: list[JobProgress] = []
    job_rows = list(
        session.execute(select(Job.id, Job.name, Job.created_at).order_by(Job.created_at.desc()).limit(max_jobs))
    )
    if job_rows:
        per_job: dict[str, OutcomeCounts] = {j.id: OutcomeCounts(j.id) for j in job_rows}
        states: dict[str, dict[str, int]] = {j.id: {} for j in job_rows}
        for job_id, state, outcome, n in session.execute(
            select(Run.job_id, Run.state, Run.outcome, func.count())
            .where(Run.job_id.in_(list(per_job)))
            .group_by(Run.job_id, Run.state, Run.outcome)
        ):
            key = str(job_id)
            per_job[key].add(outcome, n)
            if outcome is None:
                states[key][state] = states[key].get(state, 0) + n
        jobs = [JobProgress(j.id, j.name, j.created_at, per_job[j.id], states[j.id]) for j in job_rows]

    def ordered(groups: dict[str, OutcomeCounts]) -> list[OutcomeCounts]:
        return sorted(groups.values(), key=lambda c: (-c.total, c.key))

    return Overview(
        totals=totals,
        by_category=ordered(cats),
        by_os=ordered(by_os),
        by_agent=ordered(agents),
        by_image=ordered(images),
        residue=Share(residue["yes"], decided, _rate(residue["yes"], decided)),
        residue_undetermined=residue["undetermined"],
        high_impact=Share(impactful or 0, totals.total, _rate(impactful or 0, totals.total)),
        jobs=jobs,
        unfinished=totals.unfinished,
        generated_at=datetime.now(UTC),
    )


# --- runs list -------------------------------------------------------------------------------


def _parse_day(name: str, value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise InputError(None, name, f"expected a date YYYY-MM-DD; got {value!r}") from None


def _parse_int(name: str, value: str | None, default: int, low: int, high: int) -> int:
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise InputError(None, name, f"expected a whole number; got {value!r}") from None
    if not low <= number <= high:
        raise InputError(None, name, f"must be between {low} and {high}; got {number}")
    return number


@dataclass(frozen=True)
class RunFilter:
    """Filters, sort and page of the runs list, as given in the query string.

    Text filters match exactly except `job` (a job id or a prefix of one). `date_from` and
    `date_to` are UTC days, both inclusive, compared with the run's start time (its
    creation time while it has not started). `page` counts from 1.
    """

    task: str = ""
    category: str = ""
    image: str = ""
    agent: str = ""
    outcome: str = ""
    job: str = ""
    date_from: date | None = None
    date_to: date | None = None
    sort: str = "started"
    order: str = "desc"
    page: int = 1
    size: int = 50

    @classmethod
    def parse(cls, params: dict[str, str]) -> RunFilter:
        """Build from query parameters; unknown keys are ignored, bad values raise `InputError`."""

        def get(key: str) -> str:
            return (params.get(key) or "").strip()

        outcome = get("outcome")
        if outcome and outcome not in OUTCOME_FILTERS:
            raise InputError(None, "outcome", f"must be one of {', '.join(OUTCOME_FILTERS)}; got {outcome!r}")
        sort = get("sort") or "started"
        if sort not in SORT_KEYS:
            raise InputError(None, "sort", f"must be one of {', '.join(SORT_KEYS)}; got {sort!r}")
        order = get("order") or ("asc" if sort == "task" else "desc")
        if order not in ("asc", "desc"):
            raise InputError(None, "order", f"must be asc or desc; got {order!r}")
        return cls(
            task=get("task"),
            category=get("category"),
            image=get("image"),
            agent=get("agent"),
            outcome=outcome,
            job=get("job").lower(),
            date_from=_parse_day("from", get("from")),
            date_to=_parse_day("to", get("to")),
            sort=sort,
            order=order,
            page=_parse_int("page", get("page"), 1, 1, 1_000_000),
            size=_parse_int("size", get("size"), 50, 1, MAX_PAGE_SIZE),
        )

    def query(self, **changes: Any) -> dict[str, str]:
        """The query-string parameters of this filter with `changes` applied (empty values
        and defaults left out), for links to other pages and sort orders."""
        values: dict[str, Any] = {
            "task": self.task,
            "category": self.category,
            "image": self.image,
            "agent": self.agent,
            "outcome": self.outcome,
            "job": self.job,
            "from": self.date_from.isoformat() if self.date_from else "",
            "to": self.date_to.isoformat() if self.date_to else "",
            "sort": self.sort if self.sort != "started" else "",
            "order": self.order,
            "page": self.page if self.page != 1 else "",
            "size": self.size if self.size != 50 else "",
        }
        values.update(changes)
        if values.get("order") == ("asc" if (values.get("sort") or "started") == "task" else "desc"):
            values["order"] = ""
        return {k: str(v) for k, v in values.items() if v not in ("", None)}

    def active(self) -> bool:
        """True when any filter (not sort or page) is set."""
        return any(
            (self.task, self.category, self.image, self.agent, self.outcome, self.job, self.date_from, self.date_to)
        )


@dataclass
class RunRow:
    """One line of the runs list: the run, its job's name, command and finding counts."""

    run: RunSummary
    job_name: str | None
    commands: int
    high_impact: bool
    residue_findings: int


@dataclass
class RunsPage:
    """A page of the runs list plus the values offered in its filter drop-downs."""

    filter: RunFilter
    rows: list[RunRow]
    total: int
    pages: int
    options: dict[str, list[str]]
    jobs: list[tuple[str, str]]
    unfinished: int


def _start_expr() -> ColumnElement[Any]:
    return func.coalesce(Run.started_at, Run.created_at)


def _duration_expr(session: Session) -> ColumnElement[Any]:
    if session.get_bind().dialect.name == "postgresql":
        return func.extract("epoch", Run.finished_at - Run.started_at)
    return (func.julianday(Run.finished_at) - func.julianday(Run.started_at)) * 86400.0


def _filtered(stmt: Select[Any], f: RunFilter) -> Select[Any]:
    for column, value in ((Run.task_id, f.task), (Run.task_category, f.category), (Run.image, f.image)):
        if value:
            stmt = stmt.where(column == value)
    if f.agent:
        stmt = stmt.where(Run.agent == f.agent)
    if f.outcome == "unfinished":
        stmt = stmt.where(Run.outcome.is_(None))
    elif f.outcome:
        stmt = stmt.where(Run.outcome == f.outcome)
    if f.job:
        stmt = stmt.where(or_(Run.job_id == f.job, Run.job_id.startswith(f.job, autoescape=True)))
    if f.date_from:
        stmt = stmt.where(_start_expr() >= datetime.combine(f.date_from, time(), UTC))
    if f.date_to:
        stmt = stmt.where(_start_expr() < datetime.combine(f.date_to + timedelta(days=1), time(), UTC))
    return stmt


def _distinct(session: Session, column: Any) -> list[str]:
    return [v for v in session.scalars(select(column).where(column.is_not(None)).distinct().order_by(column))]


def runs_page(session: Session, f: RunFilter) -> RunsPage:
    """The page `f.page` of the runs matching `f`, sorted by `f.sort` (ties by id)."""
    total = session.scalar(_filtered(select(func.count()).select_from(Run), f)) or 0
    pages = max(1, -(-total // f.size))
    sort_column: Any = {
        "started": _start_expr(),
        "duration": _duration_expr(session),
        "task": Run.task_id,
        "outcome": func.coalesce(Run.outcome, literal_column("'~unfinished'")),
    }[f.sort]
    direction = sort_column.asc() if f.order == "asc" else sort_column.desc()
    if f.sort == "duration":
        direction = direction.nulls_last()
    stmt = (
        _filtered(select(Run), f)
        .order_by(direction, Run.id.desc() if f.order == "desc" else Run.id.asc())
        .limit(f.size)
        .offset((f.page - 1) * f.size)
    )
    runs = list(session.scalars(stmt))
    ids = [r.id for r in runs]
    counts: dict[str, int] = {}
    impactful: set[str] = set()
    residue: dict[str, int] = {}
    job_names: dict[str, str] = {}
    if ids:
        # `seq` is gap-free from 1 per run (recorder contract), so max(seq) is the count, and
        # one max per run is an O(log n) probe of the (run_id, seq) unique index.
        top_seq = select(func.max(Command.seq)).where(Command.run_id == Run.id).correlate(Run).scalar_subquery()
        counts = {rid: n for rid, n in session.execute(select(Run.id, top_seq).where(Run.id.in_(ids)))}
        impactful = set(
            session.scalars(select(Command.run_id).where(Command.run_id.in_(ids), impactful_clause(session)).distinct())
        )
        residue = {
            rid: n
            for rid, n in session.execute(
                select(Finding.run_id, func.count())
                .where(Finding.run_id.in_(ids), Finding.kind == "residue")
                .group_by(Finding.run_id)
            )
        }
        job_ids = {r.job_id for r in runs if r.job_id}
        if job_ids:
            job_names = {
                jid: name for jid, name in session.execute(select(Job.id, Job.name).where(Job.id.in_(job_ids)))
            }
    rows = [
        RunRow(
            run=RunSummary.of(r),
            job_name=job_names.get(r.job_id) if r.job_id else None,
            commands=counts.get(r.id) or 0,
            high_impact=r.id in impactful,
            residue_findings=residue.get(r.id, 0),
        )
        for r in runs
    ]
    options = {
        "task": _distinct(session, Run.task_id),
        "category": _distinct(session, Run.task_category),
        "image": _distinct(session, Run.image),
        "agent": _distinct(session, Run.agent),
    }
    jobs = [
        (j.id, j.name) for j in session.execute(select(Job.id, Job.name).order_by(Job.created_at.desc()).limit(200))
    ]
    unfinished = sum(1 for r in runs if r.outcome is None)
    return RunsPage(f, rows, total, pages, options, jobs, unfinished)


# --- one run -----------------------------------------------------------------------------------


@dataclass
class PhaseBar:
    """A phase placed on the run's time axis (seconds from the first phase's start)."""

    name: str
    status: str
    start_s: float
    duration_s: float | None
    detail: str | None
    started_at: datetime
    finished_at: datetime | None


@dataclass
class CommandRow:
    """A command of the log; `stdout`/`stderr`/`command` cut to `PREVIEW_CHARS`, with
    their full lengths in `*_length`."""

    id: int
    seq: int
    node: str | None
    phase: str
    source: str
    command: str
    command_length: int
    exit_code: int | None
    timed_out: bool
    error: str | None
    started_at: datetime
    duration_ms: int
    impact: list[str]
    redacted: list[str] | None
    stdout: str
    stdout_length: int
    stdout_truncated: bool
    stderr: str
    stderr_length: int
    stderr_truncated: bool
    findings: list[dict[str, Any]] = field(default_factory=list)
    """Findings attributed to this command: `{"id", "kind", "category"}` each."""

    @property
    def status(self) -> str:
        """`ok`, `exit N`, `timeout`, `error` or `-`."""
        if self.timed_out:
            return "timeout"
        if self.error:
            return "error"
        if self.exit_code is None:
            return "-"
        return "ok" if self.exit_code == 0 else f"exit {self.exit_code}"


@dataclass
class FindingRow:
    """A finding with the seq of the command it is attributed to (if any)."""

    id: int
    node: str | None
    kind: str
    category: str
    summary: str
    evidence: Any
    command_id: int | None
    command_seq: int | None
    command_text: str | None


@dataclass
class CheckRow:
    """A check result with its evidence (`detail`)."""

    id: int
    requirement: str
    description: str | None
    point: str | None
    node: str | None
    status: str
    detail: Any


@dataclass
class NodeRow:
    """A node of the run's lab."""

    name: str
    image: str | None
    os_release: str | None
    domain_name: str | None
    mgmt_ip: str | None


@dataclass
class SnapshotDiff:
    """The differences of one node between two snapshot points, probes with no change left
    out of `probes` (`unchanged` counts them)."""

    node: str
    before: str
    after: str
    probes: dict[str, ProbeDiff]
    unchanged: int

    @property
    def changes(self) -> int:
        """Number of added, removed and changed items over every probe."""
        return sum(len(d.items()) for d in self.probes.values())


@dataclass
class RunPage:
    """Everything on a run's page (`/runs/{id}`, `/api/runs/{id}`)."""

    run: RunSummary
    job_name: str | None
    config: Any
    phases: list[PhaseBar]
    nodes: list[NodeRow]
    checks: list[CheckRow]
    findings: list[FindingRow]
    snapshots: dict[str, list[str]]
    diffs: list[SnapshotDiff]
    commands: list[CommandRow]
    command_total: int
    command_page: int
    command_pages: int
    command_page_size: int
    phase_counts: dict[str, int]
    impactful_commands: int


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def _command_rows(session: Session, run_id: str, first_seq: int, last_seq: int) -> list[CommandRow]:
    c = Command
    stmt = (
        select(
            c.id,
            c.seq,
            c.node,
            c.phase,
            c.source,
            func.substr(c.command, 1, PREVIEW_CHARS),
            func.length(c.command),
            c.exit_code,
            c.timed_out,
            c.error,
            c.started_at,
            c.duration_ms,
            c.impact,
            c.redacted,
            func.substr(c.stdout, 1, PREVIEW_CHARS),
            func.length(c.stdout),
            c.stdout_truncated,
            func.substr(c.stderr, 1, PREVIEW_CHARS),
            func.length(c.stderr),
            c.stderr_truncated,
        )
        .where(c.run_id == run_id, c.seq >= first_seq, c.seq <= last_seq)
        .order_by(c.seq)
    )
    return [
        CommandRow(
            id=row[0],
            seq=row[1],
            node=row[2],
            phase=row[3],
            source=row[4],
            command=row[5] or "",
            command_length=row[6] or 0,
            exit_code=row[7],
            timed_out=bool(row[8]),
            error=row[9],
            started_at=row[10],
            duration_ms=row[11],
            impact=list(row[12] or []),
            redacted=list(row[13]) if row[13] else None,
            stdout=row[14] or "",
            stdout_length=row[15] or 0,
            stdout_truncated=bool(row[16]),
            stderr=row[17] or "",
            stderr_length=row[18] or 0,
            stderr_truncated=bool(row[19]),
        )
        for row in session.execute(stmt)
    ]


def command_page_of(seq: int, page_size: int = COMMAND_PAGE_SIZE) -> int:
    """The command-log page (from 1) showing the command numbered `seq`."""
    return max(1, (seq - 1) // page_size + 1)


DIFF_CACHE_SIZE = 64
"""Runs whose snapshot differences are kept in memory (see `snapshot_diffs`)."""

_diff_cache: OrderedDict[tuple[str, tuple[Any, ...]], list[SnapshotDiff]] = OrderedDict()
_diff_lock = threading.Lock()


def snapshot_diffs(session: Session, run_id: str) -> list[SnapshotDiff]:
    """Per node, the differences between consecutive snapshot points that both exist.

    Results are cached (LRU, `DIFF_CACHE_SIZE` runs) under the run id and the (id,
    taken_at) of its snapshots, so a replaced or added snapshot misses the cache; a hit
    costs one query that does not load snapshot data."""
    stamps = tuple(
        (sid, taken)
        for sid, taken in session.execute(
            select(Snapshot.id, Snapshot.taken_at).where(Snapshot.run_id == run_id).order_by(Snapshot.id)
        )
    )
    key = (run_id, stamps)
    with _diff_lock:
        if key in _diff_cache:
            _diff_cache.move_to_end(key)
            return _diff_cache[key]
    snaps: dict[tuple[str, str], Any] = {}
    for node, point, data in session.execute(
        select(Snapshot.node, Snapshot.point, Snapshot.data).where(Snapshot.run_id == run_id)
    ):
        snaps[(node, point)] = data if isinstance(data, dict) else {}
    nodes = sorted({n for n, _ in snaps})
    out: list[SnapshotDiff] = []
    for node in nodes:
        for before, after in DIFF_PAIRS:
            if (node, before) not in snaps or (node, after) not in snaps:
                continue
            diffs = diff_snapshots(snaps[(node, before)], snaps[(node, after)])
            shown = {name: d for name, d in diffs.items() if not d.empty or d.status != "compared" or d.notes}
            out.append(SnapshotDiff(node, before, after, shown, len(diffs) - len(shown)))
    with _diff_lock:
        _diff_cache[key] = out
        while len(_diff_cache) > DIFF_CACHE_SIZE:
            _diff_cache.popitem(last=False)
    return out


def run_page(session: Session, ref: str, *, command_page: int = 1, page_size: int = COMMAND_PAGE_SIZE) -> RunPage:
    """Everything about run `ref` (full id or unique prefix; `InputError` subclasses when
    unknown or ambiguous), with page `command_page` of its command log."""
    run_id = resolve_run_id(session, ref)
    run = session.get(Run, run_id)
    assert run is not None
    job_name = session.scalar(select(Job.name).where(Job.id == run.job_id)) if run.job_id else None

    phase_rows = list(session.scalars(select(Phase).where(Phase.run_id == run_id).order_by(Phase.id)))
    origin = phase_rows[0].started_at if phase_rows else run.started_at
    phases = [
        PhaseBar(
            name=p.name,
            status=p.status,
            start_s=_seconds(origin, p.started_at) or 0.0,
            duration_s=_seconds(p.started_at, p.finished_at),
            detail=p.detail,
            started_at=p.started_at,
            finished_at=p.finished_at,
        )
        for p in phase_rows
    ]
    nodes = [
        NodeRow(n.name, n.image, n.os_release, n.domain_name, n.mgmt_ip)
        for n in session.scalars(select(Node).where(Node.run_id == run_id).order_by(Node.id))
    ]
    checks = [
        CheckRow(c.id, c.requirement, c.description, c.point, c.node, c.status, c.detail)
        for c in session.scalars(select(Check).where(Check.run_id == run_id).order_by(Check.id))
    ]
    findings = [
        FindingRow(f.id, f.node, f.kind, f.category, f.summary, f.evidence, f.command_id, seq, cmd)
        for f, seq, cmd in session.execute(
            select(Finding, Command.seq, func.substr(Command.command, 1, 200))
            .outerjoin(Command, Command.id == Finding.command_id)
            .where(Finding.run_id == run_id)
            .order_by(Finding.id)
        )
    ]
    snapshots: dict[str, list[str]] = {}
    for node, point in session.execute(
        select(Snapshot.node, Snapshot.point).where(Snapshot.run_id == run_id).order_by(Snapshot.taken_at)
    ):
        snapshots.setdefault(node, []).append(point)

    phase_counts: dict[str, int] = {}
    for phase, n in session.execute(
        select(Command.phase, func.count()).where(Command.run_id == run_id).group_by(Command.phase)
    ):
        phase_counts[phase] = n
    total = sum(phase_counts.values())
    impactful_n = (
        session.scalar(
            select(func.count()).select_from(Command).where(Command.run_id == run_id, impactful_clause(session))
        )
        or 0
    )
    top_seq = session.scalar(select(func.max(Command.seq)).where(Command.run_id == run_id)) or 0
    pages = max(1, -(-top_seq // page_size))
    command_page = min(max(1, command_page), pages)
    first = (command_page - 1) * page_size + 1
    commands = _command_rows(session, run_id, first, first + page_size - 1)
    by_id = {c.id: c for c in commands}
    for f in findings:
        if f.command_id in by_id:
            by_id[f.command_id].findings.append({"id": f.id, "kind": f.kind, "category": f.category})

    return RunPage(
        run=RunSummary.of(run),
        job_name=job_name,
        config=run.config,
        phases=phases,
        nodes=nodes,
        checks=checks,
        findings=findings,
        snapshots=snapshots,
        diffs=snapshot_diffs(session, run_id),
        commands=commands,
        command_total=total,
        command_page=command_page,
        command_pages=pages,
        command_page_size=page_size,
        phase_counts=phase_counts,
        impactful_commands=impactful_n,
    )


def full_command(session: Session, ref: str, seq: int) -> dict[str, Any] | None:
    """Every column of command `seq` of run `ref` (JSON-ready), or None if there is none."""
    run_id = resolve_run_id(session, ref)
    c = session.scalar(select(Command).where(Command.run_id == run_id, Command.seq == seq))
    if c is None:
        return None
    return {
        "run_id": run_id,
        "id": c.id,
        "seq": c.seq,
        "node": c.node,
        "phase": c.phase,
        "source": c.source,
        "command": c.command,
        "exit_code": c.exit_code,
        "stdout": c.stdout,
        "stderr": c.stderr,
        "stdout_truncated": c.stdout_truncated,
        "stderr_truncated": c.stderr_truncated,
        "timed_out": c.timed_out,
        "started_at": c.started_at.isoformat(),
        "duration_ms": c.duration_ms,
        "impact": list(c.impact or []),
        "redacted": c.redacted,
        "error": c.error,
    }


# --- tasks ------------------------------------------------------------------------------------


@dataclass
class TaskRow:
    """A task with its overall counts and one `OutcomeCounts` per variant (key
    `variant · image`)."""

    task_id: str
    category: str | None
    counts: OutcomeCounts
    variants: list[tuple[str | None, str | None, OutcomeCounts]]
    agents: list[str]


def tasks(session: Session) -> list[TaskRow]:
    """Every task seen in `runs`, with its variants (variant, image) and their pass rates."""
    groups: dict[str, dict[tuple[str | None, str | None], OutcomeCounts]] = {}
    categories: dict[str, str | None] = {}
    agents: dict[str, set[str]] = defaultdict(set)
    for task_id, category, variant, image, agent, outcome, n in session.execute(
        select(Run.task_id, Run.task_category, Run.variant, Run.image, Run.agent, Run.outcome, func.count()).group_by(
            Run.task_id, Run.task_category, Run.variant, Run.image, Run.agent, Run.outcome
        )
    ):
        per = groups.setdefault(task_id, {})
        key = (variant, image)
        per.setdefault(key, OutcomeCounts(f"{variant or '-'} · {image or '-'}")).add(outcome, n)
        categories[task_id] = categories.get(task_id) or category
        agents[task_id].add(agent)
    out: list[TaskRow] = []
    for task_id in sorted(groups):
        total = OutcomeCounts(task_id)
        variants = []
        for (variant, image), counts in sorted(
            groups[task_id].items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")
        ):
            variants.append((variant, image, counts))
            for name in ("passed", "failed", "error", "cancelled", "unfinished"):
                total.add(None if name == "unfinished" else name, getattr(counts, name))
        out.append(TaskRow(task_id, categories[task_id], total, variants, sorted(agents[task_id])))
    return out

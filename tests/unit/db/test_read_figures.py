"""Report figures on a database of known content, against numbers worked out by hand.

The seeded runs (job J holds R1-R5; R6 has no job):

| run | task  | category | outcome   | residue      | duration | created    |
| R1  | web-a | web      | passed    | no           | 100 s    | 2024-01-01 |
| R2  | web-b | web      | failed    | yes          | 300 s    | 2024-01-02 |
| R3  | db-a  | database | passed    | undetermined |  50 s    | 2024-06-01 |
| R4  | db-a  | database | error     | NULL         |  20 s    | 2024-06-02 |
| R5  | misc  | NULL     | cancelled | NULL         |  10 s    | 2024-06-03 |
| R6  | web-a | web      | NULL      | NULL         | running  | 2024-06-04 |

Agent commands with an exit status, by node OS: Debian (R1 web: 0, 1; R2 web: 2, 0),
Ubuntu (R1 client: 0), Rocky (R3 db: 0, 0), unknown (R3 on node "ghost": 127). Excluded:
a harness command (R1, exit 5, impact package-install) and a timed-out agent command (R1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.db.models import Run
from testbed.db.read import RunFilter
from testbed.db.read.figures import (
    UNKNOWN,
    CategoryPassRate,
    CompletionTimes,
    ImpactClass,
    OsCommandFailures,
    RebootRegression,
    ResidueCategory,
    ResidueSummary,
    compute_figures,
)
from testbed.db.recorder import RunRecorder, create_job
from testbed.db.records import CommandRecord

DEBIAN = "Debian GNU/Linux 12 (bookworm)"
UBUNTU = "Ubuntu 24.04 LTS"
ROCKY = "Rocky Linux 9.3 (Blue Onyx)"
JOB = "f" * 32


@dataclass
class Seed:
    """A run to record: commands are (node, source, exit_code, impact, timed_out)."""

    task: str
    category: str | None
    outcome: str | None
    residue: str | None
    duration_s: float | None
    created: datetime
    job: str | None = JOB
    nodes: dict[str, str | None] = field(default_factory=dict)
    commands: list[tuple[str, str, int | None, list[str], bool]] = field(default_factory=list)
    residue_findings: list[str] = field(default_factory=list)
    checks: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # requirement, point, status, node


SEEDS = [
    Seed("web-a", "web", "passed", "no", 100, datetime(2024, 1, 1, tzinfo=UTC),
         nodes={"web": DEBIAN, "client": UBUNTU},
         commands=[("web", "harness", 5, ["package-install"], False), ("web", "agent", 0, ["service-restart"], False),
                   ("web", "agent", 1, [], False), ("client", "agent", 0, ["package-install"], False),
                   ("web", "agent", None, ["reboot"], True)],
         checks=[("R1", "after_agent", "passed", "web"), ("R1", "after_reboot", "failed", "web"),
                 ("R2", "after_agent", "passed", "web"), ("R2", "after_reboot", "passed", "web"),
                 ("R3", "after_agent", "indeterminate", "web"), ("R3", "after_reboot", "failed", "web")]),
    Seed("web-b", "web", "failed", "yes", 300, datetime(2024, 1, 2, tzinfo=UTC),
         nodes={"web": DEBIAN},
         commands=[("web", "agent", 2, ["service-restart", "firewall"], False),
                   ("web", "agent", 0, ["service-restart"], False)],
         residue_findings=["file", "file", "package"],
         checks=[("R1", "after_agent", "failed", "web"), ("R1", "after_reboot", "failed", "web")]),
    Seed("db-a", "database", "passed", "undetermined", 50, datetime(2024, 6, 1, tzinfo=UTC),
         nodes={"db": ROCKY},
         commands=[("db", "agent", 0, [], False), ("db", "agent", 0, [], False), ("ghost", "agent", 127, [], False)],
         residue_findings=["file"],
         checks=[("P", "after_agent", "passed", None), ("P", "after_reboot", "failed", None),
                 ("Q", "after_agent", "passed", "db"), ("Q", "after_reboot", "failed", "other-node")]),
    Seed("db-a", "database", "error", None, 20, datetime(2024, 6, 2, tzinfo=UTC), nodes={"db": None}),
    Seed("misc", None, "cancelled", None, 10, datetime(2024, 6, 3, tzinfo=UTC)),
    Seed("web-a", "web", None, None, None, datetime(2024, 6, 4, tzinfo=UTC), job=None,
         nodes={"web": DEBIAN}, commands=[("web", "agent", 1, ["service-restart"], False)]),
]  # fmt: skip


def seed_database(db: sessionmaker[Session]) -> list[str]:
    """Record `SEEDS`; return the run ids in order."""
    create_job(db, "study", job_id=JOB)
    ids = []
    for s in SEEDS:
        rec = RunRecorder.create(db, task_id=s.task, agent="a", task_category=s.category, job_id=s.job)
        rec.set_state("agent")
        for name, release in s.nodes.items():
            rec.add_node(name, os_release=release)
        for i, (node, source, code, impact, timed_out) in enumerate(s.commands):
            rec.record_command(
                CommandRecord(
                    node=node,
                    phase="agent" if source == "agent" else "setup",
                    source=source,
                    command=f"cmd {i}",
                    started_at=s.created,
                    duration_ms=10,
                    exit_code=code,
                    impact=impact,
                    timed_out=timed_out,
                )
            )
        for category in s.residue_findings:
            rec.record_finding("residue", category, f"left {category}")
        rec.record_finding("impact", "service-restart", "not residue")
        for requirement, point, status, node in s.checks:
            rec.record_check(requirement, status, point=point, node=node, description=f"{requirement} holds")
        if s.residue is not None:
            rec.set_residue(s.residue)
        if s.outcome is not None:
            rec.finish(s.outcome)
        finished = s.created + timedelta(seconds=s.duration_s) if s.duration_s is not None else None
        with db.begin() as session:
            session.execute(
                update(Run)
                .where(Run.id == rec.run_id)
                .values(created_at=s.created, started_at=s.created, finished_at=finished)
            )
        ids.append(rec.run_id)
    return ids


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[sessionmaker[Session], list[str]]:
    db = open_database(f"sqlite:///{tmp_path_factory.mktemp('report') / 'testbed.db'}")
    return db, seed_database(db)


def test_all_runs(seeded: tuple[sessionmaker[Session], list[str]]) -> None:
    db, ids = seeded
    with db() as s:
        f = compute_figures(s)
    assert f.runs == 6 and f.selection == "all runs"
    assert f.pass_rates == [
        CategoryPassRate(UNKNOWN, runs=1, passed=0, failed=0, error=0, cancelled=1, pass_rate=None),
        CategoryPassRate("database", runs=2, passed=1, failed=0, error=1, cancelled=0, pass_rate=1.0),
        CategoryPassRate("web", runs=2, passed=1, failed=1, error=0, cancelled=0, pass_rate=0.5),
    ]
    assert f.command_failures == [
        OsCommandFailures(UNKNOWN, commands=1, failed=1, failure_rate=1.0),
        OsCommandFailures(DEBIAN, commands=5, failed=3, failure_rate=0.6),  # R6's failed command counts too
        OsCommandFailures(ROCKY, commands=2, failed=0, failure_rate=0.0),
        OsCommandFailures(UBUNTU, commands=1, failed=0, failure_rate=0.0),
    ]
    assert f.residue == ResidueSummary(runs=6, with_residue=1, without_residue=1, undetermined=1, not_analysed=3)
    assert f.residue_by_category == [
        ResidueCategory("file", findings=3, runs=2, share_of_runs=2 / 6),
        ResidueCategory("package", findings=1, runs=1, share_of_runs=1 / 6),
    ]
    assert f.impact_classes == [
        ImpactClass("service-restart", runs=3, share_of_runs=3 / 6, commands=4),
        ImpactClass("firewall", runs=1, share_of_runs=1 / 6, commands=1),
        ImpactClass("package-install", runs=1, share_of_runs=1 / 6, commands=1),  # the harness's one is excluded
        ImpactClass("reboot", runs=1, share_of_runs=1 / 6, commands=1),  # timed out, but still issued
    ]
    assert f.completion_times == [
        CompletionTimes(UNKNOWN, runs=1, min_s=10.0, median_s=10.0, max_s=10.0),
        CompletionTimes("database", runs=2, min_s=20.0, median_s=35.0, max_s=50.0),
        CompletionTimes("web", runs=2, min_s=100.0, median_s=200.0, max_s=300.0),
    ]
    assert f.runs_rebooted == 3
    assert f.reboot_regressions == [
        RebootRegression("db-a", "P", "P holds", runs=1, run_ids=[ids[2]]),
        RebootRegression("web-a", "R1", "R1 holds", runs=1, run_ids=[ids[0]]),
    ]
    assert f.to_dict()["pass_rates"][2]["pass_rate"] == 0.5


def test_job_selection(seeded: tuple[sessionmaker[Session], list[str]]) -> None:
    db, _ = seeded
    with db() as s:
        f = compute_figures(s, RunFilter(job_id=JOB))
    assert f.runs == 5
    assert [(o.os_release, o.commands, o.failed) for o in f.command_failures] == [
        (UNKNOWN, 1, 1), (DEBIAN, 4, 2), (ROCKY, 2, 0), (UBUNTU, 1, 0)]  # fmt: skip
    assert f.residue == ResidueSummary(runs=5, with_residue=1, without_residue=1, undetermined=1, not_analysed=2)
    assert [(r.category, r.share_of_runs) for r in f.residue_by_category] == [("file", 0.4), ("package", 0.2)]
    assert [(i.impact_class, i.runs, i.commands, i.share_of_runs) for i in f.impact_classes] == [
        ("service-restart", 2, 3, 0.4), ("firewall", 1, 1, 0.2), ("package-install", 1, 1, 0.2),
        ("reboot", 1, 1, 0.2)]  # fmt: skip


def test_since_selection(seeded: tuple[sessionmaker[Session], list[str]]) -> None:
    db, ids = seeded
    with db() as s:
        f = compute_figures(s, RunFilter(since=datetime(2024, 3, 1, tzinfo=UTC)))
    assert f.runs == 4
    assert [(p.category, p.runs, p.pass_rate) for p in f.pass_rates] == [(UNKNOWN, 1, None), ("database", 2, 1.0)]
    assert [(o.os_release, o.commands, o.failed) for o in f.command_failures] == [
        (UNKNOWN, 1, 1), (DEBIAN, 1, 1), (ROCKY, 2, 0)]  # fmt: skip
    assert f.residue == ResidueSummary(runs=4, with_residue=0, without_residue=0, undetermined=1, not_analysed=3)
    assert f.residue_by_category == [ResidueCategory("file", findings=1, runs=1, share_of_runs=0.25)]
    assert f.completion_times == [
        CompletionTimes(UNKNOWN, runs=1, min_s=10.0, median_s=10.0, max_s=10.0),
        CompletionTimes("database", runs=2, min_s=20.0, median_s=35.0, max_s=50.0),
    ]
    assert f.runs_rebooted == 1
    assert f.reboot_regressions == [RebootRegression("db-a", "P", "P holds", runs=1, run_ids=[ids[2]])]


def test_empty_selection(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'empty.db'}")
    with db() as s:
        f = compute_figures(s)
    assert f.runs == 0 and f.pass_rates == [] and f.command_failures == [] and f.impact_classes == []
    assert f.residue == ResidueSummary(0, 0, 0, 0, 0) and f.reboot_regressions == [] and f.runs_rebooted == 0

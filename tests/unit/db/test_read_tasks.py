"""`testbed.db.read.tasks` (a task as its runs recorded it, versions and their diffs) and
`testbed.db.read.compare` (two runs of one task side by side)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.models import Run
from testbed.db.read import IdNotFound
from testbed.db.read.compare import compare_runs
from testbed.db.read.tasks import recorded_hash, task_page, unified_diff
from testbed.db.recorder import RunRecorder
from testbed.errors import InputError
from tests.unit.db.conftest import T0, Seeder

TOML_V1 = 'id = "web-fix"\ncategory = "web"\n\n[limits]\nagent_time_s = 600\n\n[[checks]]\nid = "R1"\n'
TOML_V2 = TOML_V1.replace("600", "1200") + 'description = "nginx answers"\n'


def _record(toml: str, digest: str, checks: list[str]) -> dict[str, Any]:
    return {
        "hash": digest,
        "toml": toml,
        "instruction": f"Fix it ({digest}).",
        "checks": [{"id": c, "description": f"{c} holds", "node": "web", "persist": False} for c in checks],
    }


def _run_with(
    sessions: sessionmaker[Session], seed: Seeder, record: dict[str, Any] | None, minutes: int, **kw: Any
) -> str:
    rec = seed.run(start=T0 + timedelta(minutes=minutes), **kw)
    if record is not None:
        with sessions() as s, s.begin():
            s.execute(update(Run).where(Run.id == rec.run_id).values(config={"task": record, "limits": {}}))
    return rec.run_id


def test_versions_and_diffs(sessions: sessionmaker[Session], seed: Seeder) -> None:
    v1, v2 = _record(TOML_V1, "aaaa1111", ["R1"]), _record(TOML_V2, "bbbb2222", ["R1", "R2"])
    first = _run_with(sessions, seed, v1, 0)
    _run_with(sessions, seed, v1, 1, outcome="failed")
    _run_with(sessions, seed, v2, 2, agent="openai:m")
    _run_with(sessions, seed, None, 3, outcome="error")  # an older testbed recorded no task
    with sessions() as s:
        page = task_page(s, "web-fix")
        assert recorded_hash(s, first) == "aaaa1111"
    assert (page.counts.total, page.counts.passed, page.agents, page.unrecorded) == (4, 2, ["openai:m", "oracle"], 1)
    assert [(v.hash, v.runs, v.first_run == first) for v in page.versions] == [
        ("aaaa1111", 2, True),
        ("bbbb2222", 1, False),
    ]
    assert page.current is not None and page.current.hash == "bbbb2222"
    assert [c["id"] for c in page.checks] == ["R1", "R2"]  # the newest version's checks
    [change] = page.changes
    assert (change.before, change.after) == ("aaaa1111", "bbbb2222")
    assert [(d.kind, d.text) for d in change.toml if d.kind in ("add", "del")] == [
        ("del", "-agent_time_s = 600"),
        ("add", "+agent_time_s = 1200"),
        ("add", '+description = "nginx answers"'),
    ]
    assert change.toml[0].kind == "hunk" and [d.kind for d in change.instruction] == ["hunk", "del", "add"]


def test_task_without_records_and_unknown_task(sessions: sessionmaker[Session], seed: Seeder) -> None:
    rec = seed.run(task="dns-fix")
    rec.record_check("R7", "passed", description="resolver answers")
    with sessions() as s:
        page = task_page(s, "dns-fix")
        assert (page.versions, page.changes, page.current) == ([], [], None)
        assert page.checks == [{"id": "R7", "description": "resolver answers", "node": None, "persist": None}]
        with pytest.raises(IdNotFound, match="no task matches 'nope'"):
            task_page(s, "nope")
    assert unified_diff("a\nb\n", "a\nb\n") == []


def test_compare_two_runs_of_one_task(sessions: sessionmaker[Session], seed: Seeder) -> None:
    v1, v2 = _record(TOML_V1, "aaaa1111", ["R1"]), _record(TOML_V2, "bbbb2222", ["R1"])
    a = _run_with(sessions, seed, v1, 0)
    b = _run_with(sessions, seed, v1, 1, agent="openai:m", outcome="failed", commands=("ls", "rm -rf /srv"))
    c = _run_with(sessions, seed, v2, 2)
    other = seed.run(task="dns-fix").run_id
    for run_id, status in ((a, "passed"), (b, "failed")):
        RunRecorder(sessions, run_id).record_check("R1", status, point="after_agent", description="R1 holds")
    RunRecorder(sessions, b).record_check("R9", "failed", point="after_agent")
    with sessions() as s:
        cmp = compare_runs(s, a[:8], b[:8])
        assert compare_runs(s, a, c).same_version is False
        with pytest.raises(InputError, match="same task"):
            compare_runs(s, a, other)
        with pytest.raises(InputError, match="two different runs"):
            compare_runs(s, a, a[:6])
    assert (cmp.task_id, cmp.same_version, cmp.a.run.id, cmp.b.run.id) == ("web-fix", True, a, b)
    assert (cmp.a.totals.commands, cmp.b.totals.commands) == (1, 2)
    assert [(k.requirement, k.a, k.b) for k in cmp.checks] == [("R1", "passed", "failed"), ("R9", None, "failed")]

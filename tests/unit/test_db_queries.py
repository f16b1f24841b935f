"""Read-side queries (SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.db.queries import (
    AmbiguousRunId,
    RunNotFound,
    list_runs,
    resolve_run_id,
    run_detail,
)
from testbed.db.recorder import RunRecorder, create_job
from testbed.errors import InputError
from testbed.testing.sample_run import record_sample_run


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    return open_database(f"sqlite:///{tmp_path / 'testbed.db'}")


def test_list_runs_filters_and_order(sessions: sessionmaker[Session]) -> None:
    job = create_job(sessions, "j")
    a = record_sample_run(sessions, job_id=job)
    b = record_sample_run(sessions, outcome="failed", task_id="other")
    c = RunRecorder.create(sessions, task_id="other", agent="x").run_id
    with sessions() as s:
        assert [r.id for r in list_runs(s)] == [c, b, a]
        assert [r.id for r in list_runs(s, limit=2)] == [c, b]
        assert [r.id for r in list_runs(s, job_id=job)] == [a]
        assert [r.id for r in list_runs(s, job_id=job[:6])] == [a]
        assert [r.id for r in list_runs(s, task="other")] == [c, b]
        assert [r.id for r in list_runs(s, outcome="failed")] == [b]
        with pytest.raises(InputError):
            list_runs(s, outcome="meh")
        summary = list_runs(s, outcome="passed")[0]
        assert summary.short_id == a[:8]
        assert summary.duration_s is not None and summary.duration_s >= 0
        json.dumps(summary.to_dict())


def test_run_detail_by_prefix(sessions: sessionmaker[Session]) -> None:
    run_id = record_sample_run(sessions)
    with sessions() as s:
        d = run_detail(s, run_id[:6])
        assert d.run.id == run_id
        assert run_detail(s, run_id.upper()).run.id == run_id
        data = d.to_dict()
    text = json.dumps(data)
    assert data["run"]["created_at"].endswith("+00:00")
    assert [c["seq"] for c in data["commands"]] == [1, 2, 3, 4, 5]
    assert {s["point"] for s in data["snapshots"]} == {"before_setup", "after_setup", "after_agent"}
    assert "data" not in data["snapshots"][0]  # snapshot data is not loaded
    assert "nginx" in text


def test_unknown_short_and_ambiguous_ids(sessions: sessionmaker[Session]) -> None:
    ids = ["abcdef01" + "0" * 24, "abcdef02" + "0" * 24]
    for run_id in ids:
        RunRecorder.create(sessions, task_id="t", agent="a", run_id=run_id)
    with sessions() as s:
        with pytest.raises(AmbiguousRunId, match="abcdef01, abcdef02"):
            resolve_run_id(s, "abcdef0")
        with pytest.raises(RunNotFound):
            resolve_run_id(s, "ffffff")
        with pytest.raises(InputError, match="at least 6"):
            resolve_run_id(s, "abc")
        with pytest.raises(RunNotFound):
            resolve_run_id(s, "abcd%_")  # LIKE wildcards are escaped
        assert resolve_run_id(s, "abcdef01") == ids[0]
        assert resolve_run_id(s, ids[1]) == ids[1]

"""`testbed.db.read.ids`: the one id resolver — 4+ characters, literal, candidates named —
and the commands that use it (`runs show`, `jobs show`, `jobs cancel`, `launch --resume`)."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from testbed.cli import app
from testbed.db.models import Job, Run
from testbed.db.read.ids import (
    MIN_PREFIX,
    AmbiguousId,
    AmbiguousRunId,
    IdNotFound,
    RunNotFound,
    distinct_prefixes,
    resolve_job_id,
    resolve_run_id,
)
from testbed.db.recorder import RunRecorder, create_job
from testbed.errors import InputError

RUNS = ["abcdef01" + "0" * 24, "abcdef02" + "0" * 24, "abcd_fff" + "0" * 24]


@pytest.fixture
def runs(sessions: sessionmaker[Session]) -> list[str]:
    for run_id in RUNS:
        RunRecorder.create(sessions, task_id="t", agent="a", run_id=run_id)
    return RUNS


def test_full_id_prefix_and_case(sessions: sessionmaker[Session], runs: list[str]) -> None:
    with sessions() as s:
        assert resolve_run_id(s, runs[1]) == runs[1]
        assert resolve_run_id(s, "abcdef01") == runs[0]
        assert resolve_run_id(s, "  ABCDEF02 ") == runs[1]
        assert resolve_run_id(s, "abcd_") == runs[2]  # `_` is a literal character


def test_prefix_needs_four_characters(sessions: sessionmaker[Session], runs: list[str]) -> None:
    assert MIN_PREFIX == 4
    with sessions() as s:
        with pytest.raises(InputError, match="'abc' is too short: give at least 4 characters of the run id"):
            resolve_run_id(s, "abc")
        with pytest.raises(InputError, match="too short"):
            resolve_run_id(s, "")
        with pytest.raises(InputError, match="too short"):
            resolve_run_id(s, "%")


@pytest.mark.parametrize("ref", ["%%%%", "abc%", "ab__", "____", "abcd%"])
def test_wildcards_are_literal(sessions: sessionmaker[Session], runs: list[str], ref: str) -> None:
    with sessions() as s, pytest.raises(RunNotFound, match="no run matches"):
        resolve_run_id(s, ref)


def test_ambiguous_prefix_names_the_candidates(sessions: sessionmaker[Session], runs: list[str]) -> None:
    with sessions() as s, pytest.raises(AmbiguousRunId) as caught:
        resolve_run_id(s, "abcdef0")
    assert caught.value.matches == ["abcdef01", "abcdef02"]
    assert caught.value.field == "run id"
    assert "'abcdef0' matches several runs (abcdef01, abcdef02); give more characters" in str(caught.value)
    assert isinstance(caught.value, InputError)


def test_candidates_are_cut_where_they_differ() -> None:
    ids = ["a" * 12 + "1" + "0" * 19, "a" * 12 + "2" + "0" * 19]
    assert distinct_prefixes(ids) == ["a" * 12 + "1", "a" * 12 + "2"]
    assert distinct_prefixes(["12345678ab", "87654321ab"]) == ["12345678", "87654321"]


def test_more_candidates_than_listed(sessions: sessionmaker[Session]) -> None:
    for i in range(7):
        RunRecorder.create(sessions, task_id="t", agent="a", run_id=f"beef{i:02d}" + "0" * 26)
    with sessions() as s, pytest.raises(AmbiguousRunId) as caught:
        resolve_run_id(s, "beef")
    assert len(caught.value.matches) == 5 and str(caught.value).endswith("…); give more characters")


def test_jobs_resolve_with_their_own_field(sessions: sessionmaker[Session]) -> None:
    a = create_job(sessions, "a", job_id="1234aaaa" + "0" * 24)
    create_job(sessions, "b", job_id="1234bbbb" + "0" * 24)
    with sessions() as s:
        assert resolve_job_id(s, "1234a") == a
        with pytest.raises(AmbiguousId, match="matches several jobs") as caught:
            resolve_job_id(s, "1234", field="--job")
        assert caught.value.field == "--job"
        with pytest.raises(IdNotFound, match="no job matches '9999'"):
            resolve_job_id(s, "9999")


# --- through the CLI: exit status 2, the message, nothing changed ---------------------------


def test_jobs_cancel_percent_cancels_nothing(db_url: str, sessions: sessionmaker[Session]) -> None:
    job = create_job(sessions, "only")
    for ref in ("%", "%%%%", "____"):
        result = CliRunner().invoke(app, ["jobs", "cancel", ref, "--db", db_url])
        assert result.exit_code != 0 and isinstance(result.exception, InputError), result.output
    with sessions() as s:
        assert s.scalar(select(Job.cancelled_at).where(Job.id == job)) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["runs", "show", "abc"], "at least 4 characters"),
        (["runs", "show", "abcdef0"], "abcdef01, abcdef02"),
        (["runs", "findings", "abcd%"], "no run matches 'abcd%'"),
        (["jobs", "show", "%%%%"], "no job matches '%%%%'"),
    ],
)
def test_cli_refuses_bad_prefixes_with_exit_2(
    db_url: str, runs: list[str], args: list[str], message: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from testbed.cli import main

    monkeypatch.setattr("sys.argv", ["testbed", *args, "--db", db_url])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("error:") and "Traceback" not in err


def test_launch_resume_uses_the_same_rule(db_url: str, sessions: sessionmaker[Session]) -> None:
    from testbed.scheduler.launch import resolve_job_id as launch_resolve

    job = create_job(sessions, "j", job_id="cafe" + "0" * 28)
    assert launch_resolve(sessions, "cafe") == job
    with pytest.raises(InputError, match="JOB_ID: 'caf' is too short"):
        launch_resolve(sessions, "caf")
    with pytest.raises(IdNotFound, match="JOB_ID: no job matches 'caf%'"):
        launch_resolve(sessions, "caf%")
    with sessions() as s:
        assert s.scalar(select(Run.id)) is None

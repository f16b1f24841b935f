"""`testbed runs ...` through Typer's CliRunner (SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.cli.runs import runs_app
from testbed.db.engine import open_database
from testbed.errors import InputError
from testbed.testing.sample_run import record_sample_run

runner = CliRunner()


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'testbed.db'}"


def test_runs_list_and_show(url: str) -> None:
    sessions = open_database(url)
    passed = record_sample_run(sessions)
    failed = record_sample_run(sessions, outcome="failed", task_id="dns-zone")

    result = runner.invoke(runs_app, ["list", "--db", url])
    assert result.exit_code == 0, result.output
    assert passed[:8] in result.output and failed[:8] in result.output
    assert "dns-zone" in result.output and "passed" in result.output

    result = runner.invoke(runs_app, ["list", "--db", url, "--limit", "1"])
    assert failed[:8] in result.output and passed[:8] not in result.output

    result = runner.invoke(runs_app, ["show", passed[:8], "--db", url])
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in (
        "phases",
        "provisioning",
        "commands (5)",
        "apt-get install -y nginx",
        "systemctl restart nginx",
        "timeout",
        "before_setup",
        "after_agent",
        "R1",
        "indeterminate",
        "service-restart",
        "10.213.0.10",
    ):
        assert expected in out, expected
    tables, stream = out.split("\ntrajectory\n")
    assert "server { listen" not in tables  # the commands table shows a command's first line
    assert "server { listen 8080; }" in stream  # the trajectory shows the whole command
    assert "$ #3 web ok" in stream and "⚑ impact service-restart: restarted nginx" in stream

    result = runner.invoke(runs_app, ["show", passed, "--db", url, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["run"]["id"] == passed
    assert data["run"]["outcome"] == "passed"
    assert len(data["commands"]) == 5
    assert data["commands"][1]["command"].endswith("EOF")
    steps = data["trajectory"]["steps"]
    assert [x["command"]["seq"] for x in steps] == [2, 3, 4] and data["trajectory"]["totals"]["commands"] == 3

    result = runner.invoke(runs_app, ["list", "--db", url, "--json", "--outcome", "failed"])
    assert [r["id"] for r in json.loads(result.output)] == [failed]


def test_runs_show_unknown_id_is_input_error(url: str) -> None:
    open_database(url)
    result = runner.invoke(runs_app, ["show", "deadbeef", "--db", url])
    assert result.exit_code != 0
    assert isinstance(result.exception, InputError)
    assert "no run matches 'deadbeef'" in str(result.exception)


def test_runs_list_filters_and_full_ids_in_pipes(url: str) -> None:
    from testbed.db.recorder import create_job

    sessions = open_database(url)
    job = create_job(sessions, "nightly")
    oracle = record_sample_run(sessions, job_id=job)
    llm = record_sample_run(sessions, agent="openai:m", outcome="failed", job_id=job)
    other = record_sample_run(sessions, agent="openai:m", task_id="dns-zone")

    def listed(*options: str) -> list[str]:
        result = runner.invoke(runs_app, ["list", "--db", url, "--json", *options])
        assert result.exit_code == 0, result.output
        return [r["id"] for r in json.loads(result.output)]

    assert listed("--agent", "openai:m") == [other, llm]
    assert listed("--agent", "openai:m", "--task", "nginx-vhost") == [llm]
    assert listed("--job", job[:6], "--outcome", "passed") == [oracle]
    assert listed("--outcome", "unfinished") == []
    table = runner.invoke(runs_app, ["list", "--db", url]).output  # not a terminal: ids whole
    assert all(run_id in table for run_id in (oracle, llm, other))
    bad = runner.invoke(runs_app, ["list", "--db", url, "--outcome", "won"])
    assert isinstance(bad.exception, InputError) and "must be one of" in str(bad.exception)
    unknown_job = runner.invoke(runs_app, ["list", "--db", url, "--job", "ffffff"])
    assert isinstance(unknown_job.exception, InputError) and "--job" in str(unknown_job.exception)


def test_runs_compare(url: str) -> None:
    sessions = open_database(url)
    a = record_sample_run(sessions)
    b = record_sample_run(sessions, agent="openai:m", outcome="failed", attempt=2)
    dns = record_sample_run(sessions, task_id="dns-zone")
    result = runner.invoke(runs_app, ["compare", a[:8], b[:8], "--db", url])
    assert result.exit_code == 0, result.output
    assert "nginx-vhost: two runs" in result.output and a in result.output and b in result.output
    assert "passed" in result.output and "failed" in result.output and "systemctl restart nginx" in result.output
    data = json.loads(runner.invoke(runs_app, ["compare", a, b, "--db", url, "--json"]).output)
    assert (data["a"]["run"]["id"], data["b"]["run"]["agent"]) == (a, "openai:m")
    first = data["checks"][0]
    assert (first["requirement"], first["a"], first["b"]) == ("R1", "passed", "failed")
    refused = runner.invoke(runs_app, ["compare", a, dns, "--db", url])
    assert isinstance(refused.exception, InputError) and "same task" in str(refused.exception)

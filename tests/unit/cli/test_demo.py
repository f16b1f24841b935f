"""`testbed demo` and `testbed dashboard --demo`: sample runs written through the recorder
into a throw-away database, no VM needed."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from testbed.cli import app
from testbed.db.read import read_only_engine
from testbed.errors import InputError

runner = CliRunner()
RUNS = 7 + 20  # the dashboard demo's finished runs and the model-evaluation jobs


def test_demo_writes_a_throwaway_database_and_refuses_a_used_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    [made] = list(tmp_path.glob("testbed-demo-*/testbed.db"))
    url = f"sqlite:///{made}"
    assert f"demo database with {RUNS} runs: {url}" in result.output
    assert f"testbed dashboard --db {url}" in result.output
    assert not (tmp_path / "home").exists()  # nothing under TESTBED_HOME
    listed = runner.invoke(app, ["runs", "list", "--db", url, "--agent", "openai:gpt-4.1-mini", "--json", "-n", "50"])
    assert listed.exit_code == 0 and listed.output.count('"agent": "openai:gpt-4.1-mini"') == 7
    again = runner.invoke(app, ["demo", "--db", url])
    assert isinstance(again.exception, InputError) and f"already holds {RUNS} run(s)" in str(again.exception)


def test_dashboard_demo_serves_the_sample_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: served.update(app=application, **kw))
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    result = runner.invoke(app, ["dashboard", "--demo", "--db", url, "--port", "8099"])
    assert result.exit_code == 0, result.output
    assert (served["host"], served["port"]) == ("127.0.0.1", 8099)
    with TestClient(served["app"], base_url="http://127.0.0.1:8099") as client:
        assert client.get("/api/overview").json()["totals"]["total"] == RUNS
        assert client.get("/", headers={"Host": "attacker.example"}).status_code == 421
    served["app"].state.engine.dispose()
    read_only_engine(url).dispose()  # migrated to head: a read-only command opens it

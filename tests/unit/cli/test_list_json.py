"""`--json` on the list commands outside the run database: `task list`, `image list`,
`state list` (the run database's `runs`/`jobs` commands are tested with their modules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.cli.images import app as image_app
from testbed.cli.serve import state_app
from testbed.cli.tasks import task_app
from testbed.config import Settings
from testbed.hypervisor.savedstate import SlotStore
from testbed.model.images import load_catalog
from testbed.model.task_record import task_hash
from testbed.model.taskload import discover_tasks
from tests.conftest import ROOT
from tests.unit.hypervisor.test_savedstate import _fake_slot

runner = CliRunner()


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TESTBED_ROOT", str(ROOT))
    monkeypatch.setenv("TESTBED_SUBNET_POOL", "10.99.0.0/16")


def test_task_list_json() -> None:
    result = runner.invoke(task_app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["id"] for r in rows] == [p.name for p in discover_tasks(ROOT)]
    web = next(r for r in rows if r["id"] == "web-port-conflict")
    assert (web["category"], web["images"], web["nodes"], web["checks"], web["persist"]) == (
        "services",
        ["debian-12", "debian-11", "debian-13"],
        ["node"],
        ["R1", "R2"],
        True,
    )
    assert web["hash"] == task_hash(ROOT / "tasks" / "web-port-conflict")


def test_image_list_json() -> None:
    result = runner.invoke(image_app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    catalog = load_catalog(ROOT / "images")
    assert set(rows) == set(catalog)
    assert all(r["present"] is False and r["key"] is None and r["path"] is None for r in rows.values())
    assert rows["debian-12"]["source"] == catalog["debian-12"].source.type


def test_state_list_json() -> None:
    assert json.loads(runner.invoke(state_app, ["list", "--json"]).output) == []
    meta, _ = _fake_slot(SlotStore(Settings.from_env()), "web-port-conflict", "k" * 20)
    result = runner.invoke(state_app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)
    assert (row["task"], row["key"], row["built_by_run"], row["created_at"]) == (
        "web-port-conflict",
        "k" * 20,
        "r1",
        meta.created_at,
    )
    assert row["size_bytes"] > 0

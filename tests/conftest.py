"""Shared fixtures: an isolated TESTBED_HOME per test, and the project root."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def testbed_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TESTBED_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich sizes tables to the terminal; give every test the same wide one so assertions on
    CLI output do not depend on how pytest was started (xdist workers have no terminal)."""
    monkeypatch.setenv("COLUMNS", "200")

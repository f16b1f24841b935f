"""Shared fixtures: an isolated TESTBED_HOME per test, the project root, and the native
snapshot helper built once per session."""

from __future__ import annotations

import shutil
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


@pytest.fixture(scope="session")
def native_helper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The native snapshot helper built from this tree (testbed.probes.native); skipped with
    the reason where no C compiler is installed (scripts/setup-host.sh installs gcc)."""
    from testbed.probes.native import binary_name, build

    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("needs a C compiler to build the native helper (scripts/setup-host.sh installs gcc)")
    dest = tmp_path_factory.mktemp("native") / binary_name()
    build(dest)
    return dest

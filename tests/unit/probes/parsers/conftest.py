"""Parsed recorded snapshots, one per distribution, shared by the parser tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.probes.parsers.recorded import load


@pytest.fixture(scope="module")
def debian() -> dict[str, Any]:
    return load("debian")


@pytest.fixture(scope="module")
def rhel() -> dict[str, Any]:
    return load("rhel")


@pytest.fixture(scope="module")
def alpine() -> dict[str, Any]:
    return load("alpine")

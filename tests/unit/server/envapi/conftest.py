"""Fixtures of the environment API's tests: the fake lab (`tests.unit.server.envapi.lab`) behind
a TestClient, and the same app served by a real uvicorn on a loopback port (for clients
that open their own connections: the stock OpenEnv client, `testbed.client`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.server.envapi.lab import fake_root, make_client, serve


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_root(tmp_path, monkeypatch)


@pytest.fixture
def client(root: Path, tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    client, db = make_client(root, tmp_path)
    with client:
        yield client, db


@pytest.fixture
def live(root: Path, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """(base URL, run database) of a token-protected server (token `s3cret`)."""
    client, db = make_client(root, tmp_path)
    with serve(client.app) as url:
        yield url, db


@pytest.fixture
def live_open(root: Path, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """(base URL, run database) of a server without a token (`--no-token`)."""
    client, db = make_client(root, tmp_path, token=None)
    with serve(client.app) as url:
        yield url, db

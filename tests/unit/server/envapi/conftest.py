"""Fixtures of the environment API's tests: the fake lab (`tests.unit.envapi_lab`) behind
a TestClient, and the same app served by a real uvicorn on a loopback port (for clients
that open their own connections: the stock OpenEnv client, `testbed.client`)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient

from tests.unit.envapi_lab import fake_root, make_client


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_root(tmp_path, monkeypatch)


@pytest.fixture
def client(root: Path, tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    client, db = make_client(root, tmp_path)
    with client:
        yield client, db


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """`app` served by uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws_max_size=2**20))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


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

"""The fake lab of the environment API's unit tests: the real Runner and AgentSession,
with `testbed.runner.steps.Lab` and `snapshot_all` replaced by fakes whose nodes answer a
tiny command language ("fix-service" repairs, "check-service" is the task's check,
"break-service" is setup, "lose-guest" loses the connection, "slow" takes 1.5 s).

`fake_root(tmp_path, monkeypatch)` patches the runner and writes a checkout with the tasks
`fake-task`, `bounded-task` (named actions) and `short-task` (2 commands);
`make_client(root, tmp_path, token=..., **limits)` builds the app over it with a SQLite
run database and returns `(TestClient, sessionmaker)`; `serve(app)` serves an app with
uvicorn on a free loopback port in a thread and yields its base URL.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient

from testbed.config import Settings
from testbed.db.engine import open_database
from testbed.guest.ssh import GuestConnectionError
from testbed.runtime import image_catalog
from testbed.server.envapi.app import create_app
from testbed.server.envapi.backend import RunnerBackend
from testbed.server.envapi.episodes import EpisodeManager
from testbed.testing.nodes import ScriptedNode

ROOT = Path(__file__).resolve().parents[4]
TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

TASK_TOML = """
id = "{id}"
category = "services"
topology = "single"
images = ["debian-12"]

[limits]
max_commands = {max_commands}

[[setup]]
node = "node"
command = "break-service"

[[checks]]
id = "R1"
description = "the service is active"
node = "node"
command = "check-service"
expect_output = "^active$"
{extra}
"""

BOUNDED = """
[actions.restart]
description = "restart a unit"
command = "systemctl restart {unit}"

[actions.restart.parameters]
type = "object"
required = ["unit"]

[actions.restart.parameters.properties.unit]
type = "string"
pattern = "^[a-z0-9@._-]+$"

[actions.repair]
description = "repair the service"
command = "fix-service"

[reward]
diagnostic_patterns = ["systemctl\\\\s+status"]
"""


class FakeNode(ScriptedNode):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.fixed = False
        self.log: list[str] = []

    async def answer(self, command: str) -> tuple[str, int]:
        self.log.append(command)
        out, code = f"ran: {command}\n", 0
        if command == "lose-guest":
            raise GuestConnectionError("connection lost")
        if command == "slow":
            await asyncio.sleep(1.5)
        if command == "break-service" and FAIL_SETUP:
            code = 1
        if command == "fix-service":
            self.fixed = True
        elif command == "check-service":
            out, code = ("active\n", 0) if self.fixed else ("failed\n", 3)
        return out, code


LABS: list[FakeLab] = []
FAIL_SETUP: list[bool] = []


class FakeLab:
    def __init__(self, topology: Any, catalog: Any, **_: Any) -> None:
        self.topology = topology
        self.nodes: dict[str, FakeNode] = {}
        self.down_called = False
        LABS.append(self)

    async def up(self) -> None:
        self.nodes = {n.name: FakeNode(n.name) for n in self.topology.nodes}

    async def down(self) -> None:
        self.down_called = True


async def fake_snapshot_all(nodes: list[Any], commands: Any, point: str) -> dict[str, dict[str, Any]]:
    return {n.name: {} for n in nodes}


def fake_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("testbed.runner.steps.Lab", FakeLab)
    monkeypatch.setattr("testbed.runner.steps.snapshot_all", fake_snapshot_all)
    LABS.clear()
    root = tmp_path / "root"
    (root / "topologies").mkdir(parents=True)
    shutil.copy(ROOT / "topologies" / "single.yaml", root / "topologies")
    for task_id, extra, max_commands in (("fake-task", "", 50), ("bounded-task", BOUNDED, 50), ("short-task", "", 2)):
        directory = root / "tasks" / task_id
        directory.mkdir(parents=True)
        (directory / "task.toml").write_text(TASK_TOML.format(id=task_id, extra=extra, max_commands=max_commands))
        (directory / "instruction.md").write_text("The service is down. Make it active.\n")
    return root


def make_client(root: Path, tmp_path: Path, token: str | None = TOKEN, **limits: Any) -> tuple[TestClient, Any]:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    settings = Settings(tmp_path / "home", "test:///default", 4096, "10.213.0.0/16", "tcg")
    rt = SimpleNamespace(
        settings=settings,
        catalog=image_catalog(),
        accel=SimpleNamespace(label="tcg", accel="tcg"),
        hypervisor=None,
        lab_host=SimpleNamespace(remote=False),
    )

    @asynccontextmanager
    async def open_manager() -> AsyncIterator[EpisodeManager]:
        yield EpisodeManager(RunnerBackend(rt, db, root), **limits)  # type: ignore[arg-type]

    return TestClient(create_app(open_manager, token)), db


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(app: Any, startup_s: float = 20, stop_s: float = 20) -> Iterator[str]:
    """`app` served by uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws_max_size=2**20))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_s
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=stop_s)

"""Trainers' clients against `testbed serve` on a real guest (2 guest boots, fast reset off).

The environment API (real Runner backend) is served by uvicorn on a loopback port, as
`testbed serve` serves it:

1. without a token (`--no-token`), the official `openenv-core` client (`GenericEnvClient`,
   WebSocket `/ws`, unmodified) resets `web-port-conflict`, diagnoses, applies the oracle's
   fix, reads the state and finishes: the run passes;
2. with a token, `testbed.client.EnvClient` and the TRL adapter drive an episode the same
   way; `reward_func` ends it and returns the return with the success bonus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openenv.core.generic_client import GenericEnvClient
from sqlalchemy import select

from testbed.client import EnvClient
from testbed.client.trl import environment_factory, reward_func
from testbed.db.engine import open_database
from testbed.db.models import Command, Run
from testbed.server.envapi.app import create_app
from testbed.server.envapi.backend import open_runner_manager
from tests.unit.server.envapi.lab import serve

from .conftest import ROOT, assert_clean

pytestmark = [pytest.mark.vm, pytest.mark.timeout(1800)]

TASK = "web-port-conflict"
SOLVE = (ROOT / "tasks" / TASK / "solution" / "solve.sh").read_text()
DIAGNOSE = "systemctl status nginx --no-pager; ss -Hltnp 'sport = :80'"


def agent_commands(db: Any, run_id: str) -> list[str]:
    with db() as s:
        return list(s.scalars(select(Command.command).where(Command.run_id == run_id, Command.source == "agent")))


def test_openenv_client_on_real_guest(vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    app = create_app(open_runner_manager(db, ROOT, max_episodes=1, step_timeout_s=120), None)
    with (
        serve(app, startup_s=60, stop_s=600) as url,
        GenericEnvClient(base_url=url, message_timeout_s=1500).sync() as env,
    ):
        first = env.reset(task=TASK, seed=1)
        assert first.done is False and first.observation["nodes"] == ["node"]
        run_id = first.observation["metadata"]["run_id"]
        look = env.step({"command": DIAGNOSE})
        assert look.reward == pytest.approx(0.09) and ":80" in look.observation["stdout"]
        fix = env.step({"node": "node", "command": SOLVE})
        assert fix.observation["exit_code"] == 0, fix.observation
        assert env.state()["step_count"] == 2
        final = env.step({"done": True})
        assert final.done is True and final.reward == pytest.approx(1.0)
        assert final.observation["metadata"]["outcome"] == "passed"
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.outcome == "passed" and run.state == "finished"
    assert agent_commands(db, run_id) == [DIAGNOSE, SOLVE]
    assert_clean(vm_home)


def test_envclient_and_trl_adapter_on_real_guest(vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    token = "vm-client-token"
    app = create_app(open_runner_manager(db, ROOT, max_episodes=1, step_timeout_s=120), token)
    with serve(app, startup_s=60, stop_s=600) as url:
        with EnvClient(url, token) as env:
            assert TASK in [t["id"] for t in env.tasks("train")]
        Env = environment_factory(url, token, agent="vm-trl")
        rollout = Env()
        assert "nginx" in rollout.reset(task=TASK).lower()
        assert "exit status" in rollout.run(DIAGNOSE)
        assert "exit status: 0" in rollout.run(SOLVE, node="node")
        [reward] = reward_func([rollout])
        assert reward == pytest.approx(1.08)
        run_id = rollout._client.episode.last.info["run_id"]
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.outcome == "passed" and run.agent == "env-api:vm-trl"
    assert agent_commands(db, run_id) == [DIAGNOSE, SOLVE]
    assert_clean(vm_home)

"""The TRL adapter driven as GRPOTrainer drives it (one instance per rollout, reset with the
dataset row, tools by name, rewards from `environments`), and the example GRPO group."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.client.trl import environment_factory, reward_func
from tests.unit.server.envapi.lab import TOKEN

ROOT = Path(__file__).resolve().parents[3]


def public_tools(cls: type) -> list[str]:
    """What TRL exposes as tools: public methods other than reset."""
    return [n for n, v in vars(cls).items() if callable(v) and not n.startswith("_") and n != "reset"]


def test_tool_surface_fits_trl() -> None:
    Env = environment_factory("http://127.0.0.1:1", TOKEN, task="fake-task")
    assert public_tools(Env) == ["run"]
    assert inspect.signature(Env).parameters == {}  # no-argument constructor
    doc = inspect.getdoc(Env.run) or ""
    assert "Args:" in doc and "command:" in doc and "node:" in doc
    hints = inspect.get_annotations(Env.run, eval_str=True)
    assert hints == {"command": str, "node": str, "return": str}


def test_rollouts_and_rewards(live: tuple[str, Any]) -> None:
    url, _db = live
    Env = environment_factory(url, TOKEN)
    rows = [{"prompt": [], "task": "fake-task"}, {"prompt": [], "scenario_id": "fake-task", "seed": 2}]
    environments = [Env() for _ in rows]
    for env, row in zip(environments, rows, strict=True):
        assert "The service is down" in env.reset(**row)
    assert "ran: fix-service" in environments[0].run("fix-service")
    environments[1].run("systemctl status x", node="node")
    assert environments[0].reward == pytest.approx(-0.01)
    rewards = reward_func(environments, completions=["a", "b"])
    assert rewards == pytest.approx([0.99, 0.09])
    with pytest.raises(ValueError, match="over"):
        environments[0].run("ls")
    assert reward_func(environments) == pytest.approx(rewards)  # ended episodes keep their return
    with pytest.raises(ValueError, match="no task"):
        Env().reset(prompt=[])


def test_example_grpo_group(live: tuple[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    url, _db = live
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import grpo_group
    finally:
        sys.path.pop(0)
    args = ["--url", url, "--token", TOKEN, "--task", "fake-task", "--probe", "systemctl status x"]
    assert grpo_group.main([*args, "--solve", "fix-service"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    rewards = [float(line.split("reward=")[1].split()[0]) for line in lines[:4]]
    assert rewards == pytest.approx([1.08, 0.09, 1.08, 0.09])
    assert "advantage=+1.000" in lines[0] and "advantage=-1.000" in lines[1]

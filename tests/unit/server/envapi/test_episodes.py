"""The environment API without VMs: the real Runner and AgentSession on a FAKE lab.

`testbed.runner.steps.Lab` and `snapshot_all` are replaced by fakes whose nodes answer a tiny
command language ("fix-service" repairs, "check-service" is the task's check), so the HTTP
layer, auth, caps, idle timeout, done handling, reward shaping and bounded actions are
exercised end to end, with every episode recorded as a run in SQLite.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from testbed.db.models import Command, Run
from testbed.server.envapi.actions import ActionSpace, is_diagnostic, validate_value
from tests.unit.server.envapi.lab import AUTH, FAIL_SETUP, LABS, make_client


def test_auth_health_schema(client: tuple[TestClient, Any]) -> None:
    c, _ = client
    assert c.get("/health").json() == {"status": "healthy"}
    assert c.post("/v1/episodes", json={"task": "fake-task"}).status_code == 401
    assert c.post("/reset", json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/schema").status_code == 401
    schema = c.get("/schema", headers=AUTH).json()
    assert set(schema) == {"action", "observation", "state", "reset"}
    assert c.get("/v1/episodes/nope", headers=AUTH).status_code == 404
    assert c.post("/v1/episodes", json={"task": "no-such-task"}, headers=AUTH).status_code == 404
    assert c.post("/v1/episodes", json={"task": "../etc"}, headers=AUTH).status_code == 404


def test_episode_solves_with_shaped_rewards_and_is_a_run(client: tuple[TestClient, Any]) -> None:
    c, db = client
    r = c.post("/v1/episodes", json={"task": "fake-task", "seed": 7, "agent": "ppo-1"}, headers=AUTH)
    assert r.status_code == 201, r.text
    body = r.json()
    eid, run_id = body["episode_id"], body["run_id"]
    assert body["observation"]["instruction"].startswith("The service is down")
    assert body["observation"]["nodes"] == ["node"] and body["done"] is False
    assert LABS[-1].nodes["node"].log == ["break-service"]  # setup ran before the episode began

    def step(payload: Any) -> dict[str, Any]:
        resp = c.post(f"/v1/episodes/{eid}/step", json=payload, headers=AUTH)
        assert resp.status_code == 200, resp.text
        return dict(resp.json())

    first = step({"node": "node", "command": "systemctl status foo"})
    assert first["reward"] == pytest.approx(0.09) and first["done"] is False
    assert first["observation"]["stdout"] == "ran: systemctl status foo\n" and first["observation"]["exit_code"] == 0
    assert step({"command": "journalctl -u foo"})["reward"] == pytest.approx(-0.01)  # the bonus only once
    assert step({"node": "node", "command": "fix-service"})["reward"] == pytest.approx(-0.01)
    state = c.get(f"/v1/episodes/{eid}", headers=AUTH).json()
    assert state["step_count"] == 3 and state["done"] is False and state["seed"] == 7
    final = step({"done": True})
    assert final["done"] is True and final["reward"] == pytest.approx(1.0)
    assert final["info"]["outcome"] == "passed" and final["info"]["done_reason"] == "agent_done"
    again = c.post(f"/v1/episodes/{eid}/step", json={"command": "ls"}, headers=AUTH)
    assert again.status_code == 409 and "after done" in again.text
    assert LABS[-1].down_called
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.outcome == "passed" and run.state == "finished" and run.agent == "env-api:ppo-1"
        episode = run.config["episode"]
        assert episode["id"] == eid and episode["seed"] == 7 and episode["return"] == pytest.approx(1.07)
        agent_cmds = s.scalars(select(Command.command).where(Command.run_id == run_id, Command.source == "agent"))
        assert list(agent_cmds) == ["systemctl status foo", "journalctl -u foo", "fix-service"]
    assert c.delete(f"/v1/episodes/{eid}", headers=AUTH).json()["outcome"] == "passed"
    assert c.get(f"/v1/episodes/{eid}", headers=AUTH).status_code == 404


def test_blocked_command_ends_episode(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    eid = c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
    out = c.post(f"/v1/episodes/{eid}/step", json={"node": "node", "command": "reboot"}, headers=AUTH).json()
    assert out["done"] is True and out["reward"] == pytest.approx(-0.5)
    assert out["observation"]["blocked"] is True and out["info"]["done_reason"] == "blocked_command"
    assert out["info"]["outcome"] == "failed"
    assert "reboot" not in LABS[-1].nodes["node"].log


def test_command_limit_ends_episode(client: tuple[TestClient, Any]) -> None:
    c, _ = client
    eid = c.post("/v1/episodes", json={"task": "short-task"}, headers=AUTH).json()["episode_id"]
    one = c.post(f"/v1/episodes/{eid}/step", json={"command": "fix-service"}, headers=AUTH).json()
    assert one["done"] is False
    two = c.post(f"/v1/episodes/{eid}/step", json={"command": "uptime"}, headers=AUTH).json()
    assert two["done"] is True and two["info"]["done_reason"] == "command_limit"
    assert two["observation"]["stdout"] == "ran: uptime\n"  # the last result is not lost
    assert two["reward"] == pytest.approx(1.09)  # -0.01 + first diagnostic 0.1 + success 1.0


def test_cap_and_parallel_episodes(root: Path, tmp_path: Path) -> None:
    client, _db = make_client(root, tmp_path, max_episodes=2)
    with client as c:
        a = c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
        b = c.post("/reset", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
        assert c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).status_code == 429
        # interleaved steps never touch each other's lab
        c.post("/step", json={"episode_id": a, "action": {"command": "fix-service"}}, headers=AUTH)
        c.post(f"/step?episode_id={b}", json={"command": "uptime"}, headers=AUTH)
        done_a = c.post(f"/v1/episodes/{a}/step", json={"done": True}, headers=AUTH).json()
        done_b = c.post("/step", json={"episode_id": b, "action": {"done": True}}, headers=AUTH).json()
        assert done_a["info"]["outcome"] == "passed" and done_b["info"]["outcome"] == "failed"
        assert c.get("/state", params={"episode_id": b}, headers=AUTH).json()["done"] is True
        assert c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).status_code == 201  # room again
    logs = sorted(tuple(lab.nodes["node"].log) for lab in LABS[:2])
    assert ("break-service", "fix-service", "check-service") in logs
    assert ("break-service", "uptime", "check-service") in logs


def test_idle_timeout_ends_episode(root: Path, tmp_path: Path) -> None:
    client, _db = make_client(root, tmp_path, idle_timeout_s=0.3, retention_s=60)
    with client as c:
        eid = c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            state = c.get(f"/v1/episodes/{eid}", headers=AUTH).json()  # reading state is not activity
            if state["done"] and state["outcome"]:
                break
            time.sleep(0.1)
        assert state["done_reason"] == "idle_timeout" and state["outcome"] == "failed"
        assert c.post(f"/v1/episodes/{eid}/step", json={"command": "ls"}, headers=AUTH).status_code == 409
    assert LABS[-1].down_called


def test_bounded_actions_and_invalid_steps(client: tuple[TestClient, Any]) -> None:
    c, db = client
    body = c.post("/reset", json={"task": "bounded-task"}, headers=AUTH).json()
    eid, run_id = body["episode_id"], body["run_id"]
    assert set(body["observation"]["actions"]) == {"restart", "repair"}
    url = f"/v1/episodes/{eid}/step"
    raw = c.post(url, content=b"{this is not json", headers={**AUTH, "Content-Type": "application/json"}).json()
    assert raw["reward"] == 0.0 and raw["done"] is False and "invalid JSON" in raw["observation"]["error"]
    unknown = c.post(url, json={"action": "format-disk"}, headers=AUTH).json()
    assert unknown["reward"] == 0.0 and "unknown action" in unknown["observation"]["error"]
    injection = c.post(url, json={"action": "restart", "parameters": {"unit": "x; rm -rf /"}}, headers=AUTH).json()
    assert injection["reward"] == 0.0 and "does not match" in injection["observation"]["error"]
    free = c.post(url, json={"node": "node", "command": "fix-service"}, headers=AUTH).json()
    assert free["reward"] == 0.0 and "bounded actions only" in free["observation"]["error"]
    ok = c.post(url, json={"action": "restart", "parameters": {"unit": "nginx"}}, headers=AUTH).json()
    assert ok["observation"]["command"] == "systemctl restart nginx" and ok["reward"] == pytest.approx(-0.01)
    fixed = c.post("/step", json={"episode_id": eid, "action": {"action": "repair"}}, headers=AUTH).json()
    assert fixed["observation"]["stdout"] == "ran: fix-service\n"
    final = c.delete(f"/v1/episodes/{eid}", headers=AUTH).json()
    assert final["outcome"] == "passed" and final["invalid_actions"] == 4 and final["step_count"] == 2
    assert final["return"] == pytest.approx(1.0 - 0.02)
    with db() as s:
        rows = s.scalars(
            select(Command).where(Command.run_id == run_id, Command.source == "agent").order_by(Command.seq)
        ).all()
        invalid = [r for r in rows if r.error and r.error.startswith("invalid action")]
        assert len(invalid) == 4 and invalid[0].command == "{this is not json" and invalid[0].exit_code is None
        assert [r.command for r in rows if not r.error] == ["systemctl restart nginx", "fix-service"]


def test_action_space_and_diagnostics_units() -> None:
    with pytest.raises(Exception, match="not declared"):
        ActionSpace.from_task({"a": {"command": "echo {x}"}}, ["node"], None)
    with pytest.raises(Exception, match="unsupported"):
        ActionSpace.from_task({"a": {"command": "true", "parameters": {"type": "object", "oneOf": []}}}, ["n"], None)
    space = ActionSpace.from_task(
        {
            "ping": {
                "command": "ping -c {count} {host}",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "host": {"type": "string"},
                        "count": {"type": "integer", "minimum": 1, "maximum": 5},
                        "node": {"type": "string", "enum": ["a", "b"]},
                    },
                    "required": ["host"],
                },
            }
        },
        ["a", "b"],
        None,
    )
    assert space.resolve("ping", {"host": "h 1", "count": 2, "node": "b"}, ["a", "b"]) == ("b", "ping -c 2 'h 1'")
    for bad in ({"count": 2}, {"host": "h", "count": 9}, {"host": "h", "count": True}, {"host": "h", "extra": 1}):
        with pytest.raises(ValueError):
            space.resolve("ping", bad, ["a", "b"])
    assert validate_value([1, "x"], {"type": "array", "items": {"type": "integer"}}) == [
        "parameters[1]: expected integer, got str"
    ]
    from testbed.server.envapi.actions import RewardConfig

    patterns = RewardConfig().diagnostic_res()
    assert is_diagnostic("sudo systemctl status nginx", patterns)
    assert is_diagnostic("cd /etc && cat nginx.conf | grep listen", patterns)
    assert not is_diagnostic("systemctl restart nginx", patterns)
    assert not is_diagnostic("apt-get install -y nginx", patterns)


@pytest.mark.parametrize(
    ("command", "diagnostic"),
    [
        # bug fix: the regex splitter only skipped `sudo -x`, so `sudo -u root …`, wrappers
        # and substitutions hid diagnostics, and quoted text was split like commands
        ("sudo -u root systemctl status nginx", True),
        ("timeout 5 curl -s http://localhost/", True),
        ("bash -c 'journalctl -u nginx -n 20'", True),
        ("CONF=$(cat /etc/nginx/nginx.conf)", True),
        ('echo "done; ls"', False),
        ("printf 'systemctl status x'", False),
        ("sudo systemctl restart nginx", False),
    ],
)
def test_diagnostics_use_the_shell_parser(command: str, diagnostic: bool) -> None:
    from testbed.server.envapi.actions import RewardConfig

    assert is_diagnostic(command, RewardConfig().diagnostic_res()) is diagnostic


def test_harness_failures_are_reported_not_scored(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("testbed.server.envapi.episodes.RECORD_GRACE_S", 0.1)
    client, db = make_client(root, tmp_path, step_timeout_s=0.5)
    with client as c:
        # a guest lost mid-episode: the step ends the episode with the run's error
        eid = c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
        lost = c.post(f"/v1/episodes/{eid}/step", json={"command": "lose-guest"}, headers=AUTH).json()
        assert lost["done"] is True and lost["reward"] == 0.0
        assert lost["info"]["outcome"] == "error" and lost["info"]["done_reason"] == "error"
        # a step whose result does not come back in time: 504 and the episode ends
        eid = c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
        slow = c.post(f"/v1/episodes/{eid}/step", json={"command": "slow"}, headers=AUTH)
        assert slow.status_code == 504 and slow.json()["detail"]["run_id"]
        state = c.get(f"/v1/episodes/{eid}", headers=AUTH).json()
        assert state["done"] is True and state["done_reason"] == "step_timeout"
        # setup failing: the reset fails with the run id; the run is recorded as error
        FAIL_SETUP.append(True)
        try:
            bad = c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH)
        finally:
            FAIL_SETUP.clear()
        assert bad.status_code == 502 and "setup step" in bad.text
        with db() as s:
            run = s.get(Run, bad.json()["detail"]["run_id"])
            assert run is not None and run.outcome == "error"

"""The HTTP side of the environment API on the fake lab: sysadmin-game's routes and the
session cookie, the task list, the token (header or query, checked before the body), the
body cap, 422 for malformed fields, and the documentation behind the token; then a
schemathesis run over /openapi.json that must never see a 5xx."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from testbed.server.envapi.app import SESSION_COOKIE
from tests.unit.server.envapi.lab import AUTH, LABS, TOKEN, make_client


def test_sysadmin_game_routes_address_the_session_episode(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    reset = c.post("/reset", json={"scenario_id": "fake-task"}, headers=AUTH)
    assert reset.status_code == 200, reset.text
    episode_id = reset.json()["episode_id"]
    assert c.cookies.get(SESSION_COOKIE) == episode_id
    step = c.post("/step", json={"command": "fix-service"}, headers=AUTH).json()  # no id: the cookie's episode
    assert step["episode_id"] == episode_id and step["observation"]["stdout"] == "ran: fix-service\n"
    assert step["observation"]["done"] is False and step["observation"]["reward"] == pytest.approx(-0.01)
    assert c.get("/state", headers=AUTH).json()["step_count"] == 1
    other = c.post("/v1/episodes", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
    assert c.cookies.get(SESSION_COOKIE) == other  # the newest reset is the session's
    c.post("/step", json={"command": "uptime"}, headers={**AUTH, "X-Episode-Id": episode_id})
    assert c.get(f"/v1/episodes/{episode_id}", headers=AUTH).json()["step_count"] == 2  # the header wins
    assert c.get(f"/v1/episodes/{other}", headers=AUTH).json()["step_count"] == 0
    final = c.post("/step", json={"done": True, "episode_id": episode_id}, headers=AUTH).json()
    assert final["done"] is True and final["observation"]["metadata"]["outcome"] == "passed"


def test_unknown_scenario_is_404_never_the_default(root: Path, tmp_path: Path) -> None:
    client, _db = make_client(root, tmp_path)
    with client as c:
        missing = c.post("/reset", json={"scenario_id": "no-such-task"}, headers=AUTH)
        assert missing.status_code == 404 and "no-such-task" in missing.text
        assert (
            c.post("/reset", json={"task": "fake-task", "scenario_id": "short-task"}, headers=AUTH).status_code == 422
        )
        assert c.post("/step", json={"command": "ls"}, headers=AUTH).status_code == 400  # no session yet
    assert LABS == []


def test_task_list_with_splits(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    listing = c.get("/tasks", headers=AUTH).json()
    assert [t["id"] for t in listing["tasks"]] == ["bounded-task", "fake-task", "short-task"]
    assert all(t["split"] == "train" for t in listing["tasks"]) and listing["splits"] == {"train": 3, "heldout": 0}
    bounded = next(t for t in listing["tasks"] if t["id"] == "bounded-task")
    assert bounded["bounded_actions"] is True and bounded["nodes"] == ["node"] and bounded["images"] == ["debian-12"]
    assert c.get("/v1/tasks", params={"split": "heldout"}, headers=AUTH).json()["tasks"] == []
    assert c.get("/tasks", params={"split": "test"}, headers=AUTH).status_code == 422


def test_a_broken_task_is_named_not_fatal(root: Path, tmp_path: Path) -> None:
    (root / "tasks" / "broken-task").mkdir()
    (root / "tasks" / "broken-task" / "task.toml").write_text('id = "broken-task"\n')
    client, _db = make_client(root, tmp_path)
    with client as c:
        listing = c.get("/tasks", headers=AUTH).json()
    assert "broken-task" not in [t["id"] for t in listing["tasks"]]
    assert listing["problems"][0]["task"] == "broken-task"


def test_token_in_header_or_query_and_checked_before_the_body(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    assert c.get("/schema", params={"token": TOKEN}).status_code == 200
    assert c.get("/schema", params={"token": "wrong"}).status_code == 401
    assert c.get("/health").status_code == 200
    # a malformed body without the token is a 401, not a 422: the body is never parsed
    bad = c.post("/v1/episodes", content=b'{"task": [', headers={"Content-Type": "application/json"})
    assert bad.status_code == 401 and bad.headers["www-authenticate"] == "Bearer"
    big = c.post("/reset", content=b"x" * (2**20 + 1))
    assert big.status_code == 401  # the token comes before the size
    for path in ("/docs", "/openapi.json"):
        assert c.get(path).status_code == 401
    assert "swagger" in c.get("/docs", params={"token": TOKEN}).text.lower()
    assert f"/openapi.json?token={TOKEN}" in c.get("/docs", params={"token": TOKEN}).text
    assert "/reset" in c.get("/openapi.json", headers=AUTH).json()["paths"]


def test_body_cap(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    assert c.post("/reset", content=b" " * (2**20 + 1), headers=AUTH).status_code == 413

    def chunks() -> Any:  # no Content-Length: counted as it streams
        for _ in range(20):
            yield b" " * 65536

    streamed = c.post("/reset", content=chunks(), headers=AUTH)
    assert streamed.status_code == 413 and LABS == []
    assert c.post("/reset", content=b" " * 1000, headers=AUTH).status_code == 400  # within the cap: no task


@pytest.mark.parametrize(
    "body",
    [
        {"task": 7},
        {"task": "fake-task", "seed": "seven"},
        {"task": "fake-task", "seed": 2**70},
        {"task": "x" * 201},
        {"scenario_id": {"nested": True}},
        {"task": "fake-task", "agent": ["a"]},
    ],
)
def test_malformed_fields_are_422(client: tuple[TestClient, Any], body: dict[str, Any]) -> None:
    c, _db = client
    for path in ("/reset", "/v1/episodes"):
        response = c.post(path, json=body, headers=AUTH)
        assert response.status_code == 422, (path, response.text)
        assert isinstance(response.json()["detail"], list)
    assert LABS == []


def test_non_object_and_deeply_nested_bodies(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    assert c.post("/reset", json=["fake-task"], headers=AUTH).status_code == 422
    deep = b"[" * 100_000 + b"]" * 100_000
    assert c.post("/reset", content=deep, headers=AUTH).status_code == 422
    eid = c.post("/reset", json={"task": "fake-task"}, headers=AUTH).json()["episode_id"]
    step = c.post(f"/v1/episodes/{eid}/step", content=deep, headers=AUTH)
    assert step.status_code == 200 and step.json()["observation"]["error"].startswith("invalid action")
    invalid_utf8 = c.post(f"/v1/episodes/{eid}/step", content=b'{"command": "\xff\xfe"}', headers=AUTH)
    assert invalid_utf8.status_code == 200


def test_fuzz_never_a_server_error(root: Path, tmp_path: Path) -> None:
    """Positive and negative cases of every operation of /openapi.json (schemathesis
    strategies, run by hypothesis): no answer is a 5xx, every answer is JSON."""
    client, _db = make_client(root, tmp_path, max_episodes=2)
    with client:
        schema = schemathesis.openapi.from_asgi("/openapi.json", client.app, headers=AUTH)
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 10
        tried: list[str] = []
        for operation in operations:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

                @given(case=operation.as_strategy(generation_mode=mode))
                @settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
                def check(case: Any) -> None:
                    response = case.call(headers=AUTH)
                    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text)
                    json.loads(response.text or "null")
                    tried.append(case.operation.label)

                try:
                    check()
                except Unsatisfiable:  # nothing to break in an operation without inputs
                    assert mode is GenerationMode.NEGATIVE, operation.label
                    tried.append(operation.label)
        assert {o.label for o in operations} <= set(tried)

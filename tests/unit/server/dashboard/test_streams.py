"""The dashboard's trajectory, compare view, task page and leaderboard (pages and JSON API),
in-process over the model-evaluation demo (`testbed.testing.demo_models`)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from testbed.db.engine import open_database
from testbed.server.dashboard import create_app
from testbed.testing.demo_models import ModelDemo, seed_models

GPT, QWEN = "openai:gpt-4.1-mini", "openai:qwen2.5-coder-7b"
WEB = "web-port-conflict"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ModelDemo]:
    url = f"sqlite:///{tmp_path_factory.mktemp('streams') / 'testbed.db'}"
    return url, seed_models(open_database(url))


@pytest.fixture(scope="module")
def client(seeded: tuple[str, ModelDemo]) -> Iterator[httpx.Client]:
    app = create_app(seeded[0])
    with TestClient(app) as c:
        yield c
    app.state.engine.dispose()


@pytest.fixture
def demo(seeded: tuple[str, ModelDemo]) -> ModelDemo:
    return seeded[1]


def test_trajectory_api(client: httpx.Client, demo: ModelDemo) -> None:
    run_id = demo.runs[f"{GPT}/{WEB}/debian-12/2"]
    t = client.get(f"/api/runs/{run_id[:8]}/trajectory").json()
    assert t["run"]["id"] == run_id and t["instruction"].startswith("# Ticket: website on this host is down")
    kinds = [s["kind"] for s in t["steps"]]
    assert kinds == ["turn", "command"] * 5 + ["turn"]
    first = t["steps"][0]["turn"]
    assert first["reasoning"].startswith("The ticket says") and first["cost_usd"] > 0 and first["prompt_tokens"] > 400
    backup = next(s for s in t["steps"] if s["kind"] == "command" and "/tmp/legacy-http" in s["command"]["command"])
    assert backup["tool_call_id"] == "call_3" and backup["turn_seq"] == 3
    assert [c["key"] for c in backup["changes"]] == ["/tmp/legacy-http.service.bak"]
    assert {f["kind"] for f in backup["findings"]} == {"impact", "residue"}
    assert t["steps"][-1]["turn"]["text"].startswith("Fixed:") and t["totals"]["turns"] == 6
    assert client.get("/api/runs/ffffffff/trajectory").status_code == 404


def test_run_page_shows_the_stream(client: httpx.Client, demo: ModelDemo) -> None:
    run_id = demo.runs[f"{GPT}/{WEB}/debian-12/2"]
    html = client.get(f"/runs/{run_id}").text
    assert 'id="trajectory"' in html and html.count('class="step turn"') == 6
    assert "Δ added" in html and "new file /tmp/legacy-http.service.bak" in html
    assert 'action="/compare"' in html and f'value="{demo.runs[f"{QWEN}/{WEB}/debian-12/1"]}"' in html
    scripted = client.get(f"/runs/{demo.runs[f'oracle/{WEB}/debian-12/1']}").text
    assert 'class="step turn"' not in scripted and scripted.count('class="step command') == 3


def test_compare(client: httpx.Client, demo: ModelDemo) -> None:
    a, b = demo.runs[f"{GPT}/{WEB}/ubuntu-24.04/1"], demo.runs[f"{GPT}/{WEB}/ubuntu-24.04/2"]
    data = client.get("/api/compare", params={"a": a, "b": b}).json()
    assert (data["a"]["run"]["outcome"], data["b"]["run"]["outcome"], data["same_version"]) == (
        "passed",
        "failed",
        True,
    )
    rebooted = {(k["requirement"], k["point"]): (k["a"], k["b"]) for k in data["checks"]}
    assert rebooted[("R1", "after_reboot")] == ("passed", "failed")
    html = client.get(f"/compare?a={a[:8]}&b={b[:8]}").text
    assert 'id="stream-a"' in html and 'id="stream-b"' in html and "kill -9 402" in html
    pilot = demo.runs[f"pilot/{GPT}"]
    assert client.get("/api/compare", params={"a": pilot, "b": a}).json()["same_version"] is False
    other_task = demo.runs[f"{GPT}/disk-full/debian-12/1"]
    assert client.get("/api/compare", params={"a": a, "b": other_task}).status_code == 400
    assert client.get("/compare?a=" + a).status_code == 400


def test_task_page_shows_definition_topology_and_diff(client: httpx.Client) -> None:
    data = client.get(f"/api/tasks/{WEB}").json()
    assert len(data["versions"]) == 2 and [v["runs"] for v in data["versions"]] == [2, 12]
    [change] = data["changes"]
    assert {"-agent_time_s = 600", "+agent_time_s = 1200", "-persist = false", "+persist = true"} <= {
        d["text"] for d in change["toml"]
    }
    html = client.get(f"/tasks/{WEB}").text
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="topology"' in html and 'class="node"' in html
    assert "# Ticket: website on this host is down" in html and 'id="diff-toml-1"' in html
    assert "agent_time_s = 1200" in html  # the task.toml text itself
    assert client.get("/tasks/no-such-task").status_code == 404
    assert f'href="/tasks/{WEB}"' in client.get("/tasks").text


def test_leaderboard(client: httpx.Client) -> None:
    data = client.get("/api/leaderboard").json()
    by_agent = {a["agent"]: a for a in data["agents"]}
    assert set(by_agent) == {GPT, QWEN, "oracle"}
    assert (by_agent[GPT]["passed"], by_agent[GPT]["failed"]) == (6, 1)
    assert by_agent[QWEN]["error"] == 1 and by_agent[QWEN]["cost_per_solved"] is None
    assert by_agent[GPT]["pass_at"]["1"] == pytest.approx(5 / 6)
    only = client.get("/api/leaderboard", params={"category": "storage"}).json()
    assert only["selection"] == "category storage" and {a["group"] for a in only["by_category"]} == {"storage"}
    html = client.get("/leaderboard").text
    assert html.count('class="axis-chart"') == 3 and 'class="tick"' in html and f'data-agent="{GPT}"' in html
    assert client.get("/api/leaderboard", params={"outcome": "won"}).status_code == 400

"""The dashboard's JSON API, HTML routes, token guard, read-only engine and bind policy,
exercised in-process (httpx over ASGI) against the seeded demo database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from testbed.db.engine import open_database
from testbed.errors import InputError
from testbed.server.dashboard import create_app
from testbed.testing.demo import DemoData, seed_demo


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, DemoData]:
    path = tmp_path_factory.mktemp("dash") / "testbed.db"
    url = f"sqlite:///{path}"
    demo = seed_demo(open_database(url))
    return url, demo


@pytest.fixture(scope="module")
def client(seeded: tuple[str, DemoData]) -> Iterator[httpx.Client]:
    from fastapi.testclient import TestClient

    app = create_app(seeded[0])
    with TestClient(app) as c:
        yield c
    app.state.engine.dispose()


@pytest.fixture
def demo(seeded: tuple[str, DemoData]) -> DemoData:
    return seeded[1]


def _ids(body: dict[str, Any]) -> set[str]:
    return {r["id"] for r in body["runs"]}


# --- overview ----------------------------------------------------------------------------


def test_overview_totals_rates_and_shares(client: httpx.Client) -> None:
    body = client.get("/api/overview").json()
    t = body["totals"]
    assert (t["total"], t["passed"], t["failed"], t["error"], t["cancelled"], t["unfinished"]) == (8, 4, 1, 1, 1, 1)
    assert t["pass_rate"] == 0.8  # 4 / (4 + 1): the harness error is not an agent failure
    cats = {c["key"]: c for c in body["by_category"]}
    assert set(cats) == {"web", "network", "security"}
    assert (cats["web"]["total"], cats["web"]["passed"], cats["web"]["unfinished"]) == (4, 2, 1)
    assert cats["network"]["pass_rate"] == 1.0  # 1 passed; the harness error is left out
    assert cats["security"]["pass_rate"] == 1.0  # the cancelled run is left out
    by_os = {c["key"]: c["total"] for c in body["by_os"]}
    assert by_os == {"Debian GNU/Linux 12 (bookworm)": 5, "Rocky Linux 9.4 (Blue Onyx)": 2, "Alpine Linux v3.20": 1}
    assert body["residue"] == {"part": 2, "whole": 4, "share": 0.5}
    assert body["residue_undetermined"] == 1
    assert body["high_impact"] == {"part": 7, "whole": 8, "share": 0.875}  # all but the harness error
    jobs = {j["name"]: j for j in body["jobs"]}
    assert jobs["smoke-2026-11-23"]["states"] == {"agent": 1}
    assert jobs["nightly-2026-11-20"]["counts"]["total"] == 6
    assert body["unfinished"] == 1


def test_high_impact_count_uses_the_partial_index(client: httpx.Client, seeded: tuple[str, DemoData]) -> None:
    from sqlalchemy.orm import Session

    from testbed.db.read.commands import impactful_clause

    engine = create_app(seeded[0]).state.engine
    with Session(engine) as session:
        clause = impactful_clause(session)
        plan = session.execute(
            text(f"EXPLAIN QUERY PLAN SELECT count(DISTINCT run_id) FROM commands WHERE {clause}")
        ).all()
    engine.dispose()
    assert "ix_commands_impactful" in str(plan)


# --- runs list ---------------------------------------------------------------------------


def test_runs_list_shape_and_default_order(client: httpx.Client, demo: DemoData) -> None:
    body = client.get("/api/runs").json()
    assert (body["total"], body["page"], body["pages"], body["size"], body["sort"], body["order"]) == (
        8,
        1,
        1,
        50,
        "started",
        "desc",
    )
    first = body["runs"][0]
    assert first["id"] == demo.runs["running"]  # newest first
    for key in (
        "id",
        "short_id",
        "task_id",
        "task_category",
        "image",
        "agent",
        "outcome",
        "state",
        "started_at",
        "duration_s",
        "commands",
        "high_impact",
        "residue_findings",
        "job_name",
    ):
        assert key in first, key
    fail = next(r for r in body["runs"] if r["id"] == demo.runs["web-fail"])
    assert (fail["commands"], fail["high_impact"], fail["residue_findings"]) == (9, True, 1)
    assert fail["job_name"] == "nightly-2026-11-20"


@pytest.mark.parametrize(
    ("query", "labels"),
    [
        ("category=web", {"web-pass", "web-fail", "web-alpine", "running"}),
        ("category=web&outcome=passed", {"web-pass", "web-alpine"}),
        ("outcome=unfinished", {"running"}),
        ("task=dns-resolver&image=rocky-9", {"dns-error"}),
        ("agent=oracle", {"web-pass", "web-alpine", "users-cancel"}),
        ("from=2026-11-21&to=2026-11-23", {"users-pass"}),
        ("to=2026-11-20&outcome=error", {"dns-error"}),
    ],
)
def test_runs_list_filters(client: httpx.Client, demo: DemoData, query: str, labels: set[str]) -> None:
    body = client.get(f"/api/runs?{query}").json()
    assert _ids(body) == {demo.runs[label] for label in labels}
    assert body["total"] == len(labels)


def test_runs_list_job_filter_takes_a_prefix(client: httpx.Client, demo: DemoData) -> None:
    body = client.get(f"/api/runs?job={demo.jobs['smoke'][:6]}").json()
    assert _ids(body) == {demo.runs["users-pass"], demo.runs["running"]}


def test_runs_list_sorting_and_paging(client: httpx.Client, demo: DemoData) -> None:
    by_task = client.get("/api/runs?sort=task").json()["runs"]
    assert [r["task_id"] for r in by_task] == sorted(r["task_id"] for r in by_task)
    by_duration = client.get("/api/runs?sort=duration&order=asc").json()["runs"]
    durations = [r["duration_s"] for r in by_duration]
    assert durations[-1] is None  # the unfinished run sorts last either way
    known = [d for d in durations if d is not None]
    assert known == sorted(known) and known[0] == 100.0  # the cancelled run
    pages = [client.get(f"/api/runs?size=3&page={p}").json() for p in (1, 2, 3)]
    assert [len(p["runs"]) for p in pages] == [3, 3, 2]
    assert pages[0]["pages"] == 3
    assert set().union(*(_ids(p) for p in pages)) == set(demo.runs.values())


@pytest.mark.parametrize("query", ["outcome=won", "sort=colour", "size=0", "size=9999", "page=x", "from=yesterday"])
def test_runs_list_rejects_bad_values(client: httpx.Client, query: str) -> None:
    response = client.get(f"/api/runs?{query}")
    assert response.status_code == 400
    assert response.json()["detail"]
    assert client.get(f"/runs?{query}").status_code == 400


# --- one run -----------------------------------------------------------------------------


def test_run_detail_shape(client: httpx.Client, demo: DemoData) -> None:
    run_id = demo.runs["web-fail"]
    body = client.get(f"/api/runs/{run_id[:8]}").json()
    assert body["run"]["id"] == run_id and body["run"]["outcome"] == "failed"
    assert [p["name"] for p in body["phases"]] == ["provisioning", "setup", "agent", "verify", "teardown"]
    assert body["phases"][2]["start_s"] == 75.0 and body["phases"][2]["duration_s"] == 55.0
    assert [n["name"] for n in body["nodes"]] == ["web", "client"]
    assert [c["seq"] for c in body["commands"]] == list(range(1, 10))
    assert body["command_total"] == 9 and body["impactful_commands"] == 2
    assert body["commands"][5]["impact"] == ["service-restart"]
    assert body["commands"][0]["stdout_length"] > 1000
    assert [(c["requirement"], c["status"]) for c in body["checks"]] == [("R1", "failed"), ("R2", "passed")]
    assert body["checks"][0]["detail"]["stdout"] == "connection refused"
    findings = {f["kind"]: f for f in body["findings"]}
    assert findings["residue"]["command_seq"] == 5
    assert findings["safety"]["command_seq"] == 7
    assert findings["impact"]["command_seq"] == 6
    assert body["commands"][4]["findings"] == [{"id": findings["residue"]["id"], "kind": "residue", "category": "file"}]
    assert body["snapshots"] == {"web": ["before_setup", "after_setup", "after_agent"]}


def test_run_detail_snapshot_diffs(client: httpx.Client, demo: DemoData) -> None:
    body = client.get(f"/api/runs/{demo.runs['web-pass']}").json()
    pairs = [(d["node"], d["before"], d["after"]) for d in body["diffs"]]
    assert pairs == [
        ("web", "before_setup", "after_setup"),
        ("web", "after_setup", "after_agent"),
        ("web", "after_agent", "after_reboot"),
    ]
    setup = body["diffs"][0]["probes"]
    assert [i["key"] for i in setup["packages"]["added"]] == ["nginx"]
    agent = body["diffs"][1]["probes"]
    assert [i["key"] for i in agent["listening"]["added"]] == ["tcp:0.0.0.0:8080"]
    assert "tmp_files" not in agent  # web-pass left no residue
    assert [i["key"] for i in body["diffs"][2]["probes"]["boot"]["changed"]] == ["boot_id"]
    residue_run = client.get(f"/api/runs/{demo.runs['web-fail']}").json()
    assert [i["key"] for i in residue_run["diffs"][1]["probes"]["tmp_files"]["added"]] == ["/tmp/notes.txt"]


def test_full_command_and_not_found(client: httpx.Client, demo: DemoData) -> None:
    run_id = demo.runs["web-fail"]
    cmd = client.get(f"/api/runs/{run_id}/commands/1").json()
    assert cmd["command"] == "apt-get install -y nginx" and cmd["stdout"].endswith("(2.11.2-2) ...\n")
    assert client.get(f"/api/runs/{run_id}/commands/99").status_code == 404
    assert client.get("/api/runs/ffffffffffff").status_code == 404
    assert client.get("/api/runs/abc").status_code == 400  # prefix too short
    assert client.get("/runs/ffffffffffff").status_code == 404
    page = client.get(f"/runs/{run_id}/commands/1")
    assert page.status_code == 200 and "Setting up nginx" in page.text


def test_tasks(client: httpx.Client) -> None:
    body = client.get("/api/tasks").json()
    tasks = {t["task_id"]: t for t in body}
    assert set(tasks) == {"nginx-vhost", "dns-resolver", "user-audit"}
    web = tasks["nginx-vhost"]
    assert web["category"] == "web" and web["agents"] == ["claude", "oracle"]
    variants = {(v[0], v[1]): v[2] for v in web["variants"]}
    assert set(variants) == {("alpine320", "alpine-3.20"), ("debian12", "debian-12")}
    assert variants[("debian12", "debian-12")]["pass_rate"] == 0.5
    assert variants[("alpine320", "alpine-3.20")]["pass_rate"] == 1.0
    assert web["counts"]["total"] == 4


def test_html_pages_render(client: httpx.Client, demo: DemoData) -> None:
    overview = client.get("/")
    assert overview.status_code == 200 and "<svg" in overview.text and 'id="autorefresh"' in overview.text
    assert "http://" not in overview.text.replace("http://www.w3.org/2000/svg", "")  # nothing external
    runs = client.get("/runs?category=network")
    assert runs.status_code == 200 and runs.text.count('data-run="') == 2
    run = client.get(f"/runs/{demo.runs['web-fail']}")
    assert run.status_code == 200
    assert run.text.count('id="cmd-') == 9 and 'href="#cmd-5"' in run.text and "<details" in run.text
    done = client.get(f"/runs/{demo.runs['web-pass']}")
    assert 'id="autorefresh"' not in done.text  # a finished run does not refresh
    assert client.get("/tasks").status_code == 200


def test_read_only(client: httpx.Client, seeded: tuple[str, DemoData]) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert client.request(method, "/api/runs").status_code == 405
    engine = create_app(seeded[0]).state.engine
    with engine.connect() as conn, pytest.raises(OperationalError, match=r"readonly|read-only|query_only"):
        conn.execute(text("DELETE FROM runs"))
    engine.dispose()


def test_missing_database_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no database file"):
        create_app(f"sqlite:///{tmp_path / 'none.db'}")
    assert not (tmp_path / "none.db").exists()


# --- token ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded(seeded: tuple[str, DemoData]) -> Iterator[httpx.Client]:
    from fastapi.testclient import TestClient

    app = create_app(seeded[0], token="s3cret-token")
    with TestClient(app, follow_redirects=False) as c:
        yield c
    app.state.engine.dispose()


def test_token_required(guarded: httpx.Client) -> None:
    response = guarded.get("/api/overview")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "token" in response.json()["detail"]
    assert guarded.get("/").status_code == 401
    assert guarded.get("/api/overview", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert guarded.get("/api/overview?token=wrong").status_code == 401
    ok = guarded.get("/api/overview", headers={"Authorization": "Bearer s3cret-token"})
    assert ok.status_code == 200 and ok.json()["totals"]["total"] == 8


def test_token_in_query_sets_a_cookie(guarded: httpx.Client) -> None:
    guarded.cookies.clear()
    response = guarded.get("/runs?token=s3cret-token&category=web")
    assert response.status_code == 303
    assert response.headers["location"] == "/runs?category=web"  # the token leaves the URL
    assert "httponly" in response.headers["set-cookie"].lower()
    assert guarded.get("/runs?category=web").status_code == 200  # the cookie now suffices
    guarded.cookies.clear()
    assert guarded.get("/runs").status_code == 401


def test_snapshot_diff_cache_follows_new_snapshots(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from testbed.db.recorder import RunRecorder
    from testbed.testing.sample_run import record_sample_run

    sessions = open_database(f"sqlite:///{tmp_path / 'testbed.db'}")
    run_id = record_sample_run(sessions)
    app = create_app(f"sqlite:///{tmp_path / 'testbed.db'}")
    with TestClient(app) as c:
        before = c.get(f"/api/runs/{run_id}").json()["diffs"]
        assert [(d["before"], d["after"]) for d in before] == [
            ("before_setup", "after_setup"),
            ("after_setup", "after_agent"),
        ]
        assert c.get(f"/api/runs/{run_id}").json()["diffs"] == before  # served from the cache
        RunRecorder(sessions, run_id).record_snapshot("web", "after_reboot", {"boot": {"boot_id": "b2"}})
        after = c.get(f"/api/runs/{run_id}").json()["diffs"]
        assert [(d["before"], d["after"]) for d in after][-1] == ("after_agent", "after_reboot")
    app.state.engine.dispose()

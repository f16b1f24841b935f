"""`testbed.server.dashboard.hosts`: the Host check against DNS rebinding, and HEAD, both
in front of the real dashboard app (httpx over ASGI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from testbed.db.engine import open_database
from testbed.server.dashboard import create_app
from testbed.server.dashboard.hosts import HostPolicy, host_name
from testbed.testing.sample_run import record_sample_run


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8080", "127.0.0.1"), ("[::1]:8080", "::1"), ("LocalHost", "localhost"), ("box.lan.:80", "box.lan"),
     ("[::1", None), ("host:port", None), ("", None), ("[::1]x", None)],
)  # fmt: skip
def test_host_name(header: str, name: str | None) -> None:
    assert host_name(header) == name


def test_policy_of_a_loopback_bind() -> None:
    policy = HostPolicy.of("127.0.0.1")
    for ok in ("127.0.0.1:8080", "localhost:8080", "127.0.0.2", "[::1]:8080"):
        assert policy.accepts(ok), ok
    for refused in ("evil.example", "evil.example:8080", "10.0.0.5:8080", "127.0.0.1.evil.example", None, ""):
        assert not policy.accepts(refused), refused


def test_policy_of_other_binds_and_allowed_hosts() -> None:
    anywhere = HostPolicy.of("0.0.0.0", ["Dash.Example.org"])
    assert anywhere.accepts("192.0.2.7:8080") and anywhere.accepts("[2001:db8::1]:80")  # address literals: no rebinding
    assert anywhere.accepts("dash.example.org") and not anywhere.accepts("rebind.attacker.example")
    one = HostPolicy.of("192.0.2.7")
    assert one.accepts("192.0.2.7:8080") and not one.accepts("192.0.2.8") and not one.accepts("127.0.0.1")
    named = HostPolicy.of("box.lan")
    assert named.accepts("box.lan:8080") and not named.accepts("other.lan")
    assert HostPolicy.of("127.0.0.1", ["*"]).accepts("anything.example")


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('hosts') / 'testbed.db'}"
    record_sample_run(open_database(url))
    return url


def test_app_refuses_other_hosts_before_anything_else(url: str) -> None:
    app = create_app(url, token="t0ken", hosts=HostPolicy.of("127.0.0.1", ["proxy.lan"]))
    with TestClient(app, base_url="http://127.0.0.1:8080") as client:
        assert client.get("/api/overview", headers={"Authorization": "Bearer t0ken"}).status_code == 200
        refused = client.get("/api/overview", headers={"Host": "rebind.attacker.example:8080"})
        assert refused.status_code == 421 and "DNS rebinding" in refused.text and "--allow-host" in refused.text
        assert client.get("/", headers={"Host": "proxy.lan"}).status_code == 401  # allowed host: then the token
        assert client.post("/api/overview", headers={"Host": "evil.example"}).status_code == 421
    app.state.engine.dispose()


def test_missing_host_is_a_bad_request() -> None:
    import asyncio

    sent: list[dict[str, object]] = []

    async def inner(scope: object, receive: object, send: object) -> None:  # pragma: no cover - never reached
        raise AssertionError("the app must not run")

    async def collect(message: dict[str, object]) -> None:
        sent.append(message)

    from testbed.server.dashboard.hosts import HostGuard

    guard = HostGuard(inner, HostPolicy.of("127.0.0.1"))  # type: ignore[arg-type]
    asyncio.run(guard({"type": "http", "method": "GET", "path": "/", "headers": []}, None, collect))  # type: ignore[arg-type]
    assert sent[0]["status"] == 400 and b"no Host header" in sent[1]["body"]  # type: ignore[operator]


def test_head_answers_like_get_without_a_body(url: str, tmp_path: Path) -> None:
    app = create_app(url, hosts=HostPolicy.of("127.0.0.1"))
    with TestClient(app, base_url="http://127.0.0.1:8080") as client:
        for path in ("/", "/runs", "/api/overview", "/leaderboard"):
            got, head = client.get(path), client.head(path)
            assert head.status_code == got.status_code == 200, path
            assert head.content == b"" and head.headers["content-length"] == str(len(got.content)), path
            assert head.headers["content-type"] == got.headers["content-type"]
        assert client.head("/runs/ffffffff").status_code == 404
        assert client.request("DELETE", "/").status_code == 405
    app.state.engine.dispose()

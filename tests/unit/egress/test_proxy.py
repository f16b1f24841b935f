"""A real Squid, started by testbed's hub on loopback, between a client and a local HTTP
server: allowed, denied, unresolvable and wrong-port requests, two labs at once, a reload
under a running transfer, and the per-lab logs those leave."""

from __future__ import annotations

import asyncio
import http.server
import ipaddress
import shutil
import socket
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from testbed.egress.hub import EgressHub, EgressSettings, LabEgressSpec, _proxy_user
from testbed.egress.proxy import SquidProxy
from testbed.egress.squidconf import SquidLayout
from testbed.errors import HarnessError
from testbed.model.egress import EgressMode, EgressSpec
from testbed.model.vocab import EgressDecision
from tests.egress_dns import DnsStub

pytestmark = pytest.mark.skipif(
    shutil.which("squid") is None, reason="squid not installed (scripts/setup-host.sh installs it)"
)

BIG = 8 * 1024 * 1024


class _Files(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        size = BIG if self.path.startswith("/big") else 1000
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        for _ in range(size // 1000):
            self.wfile.write(b"x" * 1000)
        self.wfile.write(b"x" * (size % 1000))

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
async def hub() -> AsyncIterator[EgressHub]:
    async with DnsStub() as dns:
        settings = EgressSettings(
            listen_port=0, nameservers=(dns.address,), block_private=False, mirrors=("localhost",)
        )
        async with EgressHub(settings) as egress_hub:
            yield egress_hub


def lab(key: str, subnet: str, policy: EgressSpec) -> LabEgressSpec:
    net = ipaddress.IPv4Network(subnet)
    host = str(next(net.hosts()))
    return LabEgressSpec(key, net, host, policy, {str(h): f"node{i}" for i, h in enumerate(list(net.hosts())[1:4])})


async def ask(
    host: str, port: int, request: str, source: str
) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter]:
    """Send `request` from address `source`; the status and the open connection."""
    reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
    writer.write(request.encode())
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 10)
    return int(status_line.split()[1]), reader, writer


async def fetch(host: str, port: int, url: str, source: str) -> tuple[int, bytes]:
    request = f"GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    status, reader, writer = await ask(host, port, request, source)
    body = (await asyncio.wait_for(reader.read(), 10)).split(b"\r\n\r\n", 1)[1]
    writer.close()
    return status, body


ALLOW_LOCAL = EgressSpec.model_validate({"allow": ["127.0.0.1", "*.invalid"]})


async def test_allowed_denied_dns_failure_and_connect_port(hub: EgressHub, http_port: int) -> None:
    spec = lab("one", "127.0.0.0/24", ALLOW_LOCAL)
    async with hub.lab(spec) as egress:
        at = (spec.host_ip, egress.port)
        assert egress.proxy_url == f"http://127.0.0.1:{egress.port}/"
        assert await fetch(*at, f"http://127.0.0.1:{http_port}/pool/main/h/haproxy.deb", "127.0.0.2") == (
            200,
            b"x" * 1000,
        )
        assert (await fetch(*at, "http://denied.example.org/", "127.0.0.3"))[0] == 403
        assert (await fetch(*at, "http://nosuch.invalid/dists/x/InRelease", "127.0.0.2"))[0] == 503
        status, _r, writer = await ask(*at, "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n", "127.0.0.2")
        writer.close()
        assert status == 403
        status, _r, writer = await ask(*at, "CONNECT nosuch.invalid:443 HTTP/1.1\r\nHost: x\r\n\r\n", "127.0.0.2")
        writer.close()
        assert status == 503
    rows = egress.records()
    assert [(r.method, r.node, r.status, r.decision) for r in rows] == [
        ("GET", "node0", 200, EgressDecision.ALLOWED),
        ("GET", "node1", 403, EgressDecision.DENIED),
        ("GET", "node0", 503, EgressDecision.DNS_FAILURE),
        ("CONNECT", "node0", 403, EgressDecision.DENIED),
        ("CONNECT", "node0", 503, EgressDecision.DNS_FAILURE),
    ]
    assert rows[0].url == f"http://127.0.0.1:{http_port}/pool/main/h/haproxy.deb"
    assert rows[0].host == "127.0.0.1" and rows[0].bytes > 1000
    assert rows[1].host == "denied.example.org"
    assert rows[3].url == "127.0.0.1:22"


async def test_two_labs_have_their_own_rules_and_logs_and_a_reload_spares_transfers(
    hub: EgressHub, http_port: int
) -> None:
    first = lab("first", "127.0.0.0/24", ALLOW_LOCAL)
    mirror_only = lab("second", "127.1.0.0/24", EgressSpec(mode=EgressMode.MIRROR))
    async with hub.lab(first) as one:
        at = (first.host_ip, one.port)
        request = f"GET http://127.0.0.1:{http_port}/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        status, reader, writer = await ask(*at, request, "127.0.0.2")
        assert status == 200
        part = await reader.readexactly(64 * 1024)
        async with hub.lab(mirror_only) as two:  # Squid reloads while the transfer runs
            rest = await asyncio.wait_for(reader.read(), 30)
            writer.close()
            assert len((part + rest).split(b"\r\n\r\n", 1)[1]) == BIG
            url = f"http://127.0.0.1:{http_port}/small"
            assert (await fetch(mirror_only.host_ip, two.port, url, "127.1.0.2"))[0] == 403
            assert (await fetch(*at, url, "127.0.0.3"))[0] == 200
            # a client outside the lab's subnet is not served at all
            reader, writer = await asyncio.open_connection(mirror_only.host_ip, two.port, local_addr=("127.0.0.9", 0))
            writer.write(f"GET {url} HTTP/1.1\r\n\r\n".encode())
            try:
                answer = await asyncio.wait_for(reader.read(), 5)
            except ConnectionResetError:  # closed before reading the request: a reset
                answer = b""
            assert answer == b""
            writer.close()
        assert [(r.node, r.status) for r in two.records()] == [("node0", 403)]
    assert [(r.node, r.status, r.bytes > BIG) for r in one.records()] == [("node0", 200, True), ("node1", 200, False)]


async def test_a_lab_without_egress_or_attached_twice_is_refused(hub: EgressHub) -> None:
    with pytest.raises(ValueError, match="egress 'none'"):
        async with hub.lab(lab("none", "127.0.0.0/24", EgressSpec())):
            pass
    async with hub.lab(lab("twice", "127.0.0.0/24", ALLOW_LOCAL)):
        with pytest.raises(ValueError, match="already attached"):
            async with hub.lab(lab("twice", "127.2.0.0/24", ALLOW_LOCAL)):
                pass


async def test_squid_that_cannot_start_is_a_harness_error_with_its_log() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    state = Path(tempfile.mkdtemp(prefix="testbed-egress-test-"))
    state.chmod(0o777)  # Squid writes its log as its own user
    try:
        layout = SquidLayout(port=taken.getsockname()[1], state_dir=state, user=_proxy_user())
        with pytest.raises(HarnessError, match=r"(?s)Squid exited .*Unable to open HTTP Socket"):
            async with SquidProxy(layout, start_timeout_s=20):
                pass
    finally:
        taken.close()
        shutil.rmtree(state)


@pytest.mark.skipif(shutil.which("nsenter") is None, reason="nsenter not installed (util-linux)")
async def test_the_proxy_side_starts_through_nsenter_when_a_namespace_is_named(http_port: int) -> None:
    """With `netns` set (scripts/netns-run sets TESTBED_EGRESS_NETNS to the host's network
    namespace), Squid, the port probe and the relay start through `nsenter --net=FILE`.
    FILE here is this process's own namespace (nsenter opens /proc/self/ns/net itself), so
    the whole chain runs for real without creating a namespace."""
    settings = EgressSettings(netns="/proc/self/ns/net", listen_port=0, block_private=False, mirrors=("localhost",))
    async with EgressHub(settings) as egress_hub:
        async with egress_hub.lab(lab("ns", "127.0.0.0/24", ALLOW_LOCAL)) as egress:
            squid = egress_hub._squid
            assert squid is not None and squid.pid is not None
            assert Path(f"/proc/{squid.pid}/comm").read_text().strip() == "squid"  # nsenter exec'd it
            url = f"http://127.0.0.1:{http_port}/f"
            assert await fetch("127.0.0.1", egress.port, url, "127.0.0.2") == (200, b"x" * 1000)
        assert [r.status for r in egress.records()] == [200]

"""Network check primitives: generated shell run under dash and bash against a real HTTP
server on loopback (curl, TCP clients) and stand-ins for ss/netstat, ip and vtysh; and the
harness's judgement of routing neighbours from FRR's JSON of several releases."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.model.checknet import judge_neighbor, peer_state
from testbed.model.checks import HttpCheck, NeighborCheck, PortCheck, ReachCheck, RouteCheck
from testbed.model.checkscript import Target
from testbed.model.checkshell import judge_script, primitive_script
from tests.unit.model.guestsh import SHELLS, GuestSh

T = Target()
shells = pytest.mark.parametrize("shell", SHELLS)

SS_TCP = """LISTEN 0      511          0.0.0.0:80        0.0.0.0:*    users:(("nginx",pid=41,fd=6),("nginx",pid=4,fd=6))
LISTEN 0      128        127.0.0.1:8080      0.0.0.0:*    users:(("report-api",pid=530,fd=3))
LISTEN 0      511             [::]:80           [::]:*    users:(("nginx",pid=411,fd=7))
LISTEN 0      128   [fe80::1]%eth0:9000         [::]:*    users:(("python3",pid=600,fd=3))"""
NETSTAT_TCP = """Active Internet connections (only servers)
Proto Recv-Q Send-Q Local Address           Foreign Address         State       PID/Program name
tcp        0      0 0.0.0.0:80              0.0.0.0:*               LISTEN      411/nginx: master p
tcp        0      0 127.0.0.1:8080          0.0.0.0:*               LISTEN      530/report-api
tcp6       0      0 :::22                   :::*                    LISTEN      300/sshd"""


def _sockets(g: GuestSh, use: str) -> None:
    if use == "ss":
        g.tool("ss", f"cat <<'EOF'\n{SS_TCP}\nEOF")
    else:
        g.tool("netstat", f"cat <<'EOF'\n{NETSTAT_TCP}\nEOF")


@shells
@pytest.mark.parametrize("use", ["ss", "netstat"])
def test_port_listening_by_address_and_process(tmp_path: Path, shell: str, use: str) -> None:
    g = GuestSh(tmp_path)
    _sockets(g, use)
    run = lambda **kw: g.run(primitive_script(PortCheck(wait_s=0, **kw), T), shell)  # noqa: E731
    assert run(port=80, address="any", process="nginx")[0] == 0
    assert run(port=8080, address="loopback")[0] == 0
    assert run(port=8080, address="127.0.0.1", process="report-api")[0] == 0
    code, line = run(port=8080, address="any")
    assert code == 1 and "nothing listens on 8080/tcp on any" in line
    code, line = run(port=80, process="apache2")
    assert code == 1 and "is not held by apache2" in line
    assert run(port=443, listening=False)[0] == 0
    code, line = run(port=80, listening=False)
    assert code == 1 and "80/tcp is listening" in line


@shells
def test_port_ipv6_forms(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    _sockets(g, "ss")
    assert g.run(primitive_script(PortCheck(port=9000, address="fe80::1", wait_s=0), T), shell)[0] == 0
    assert g.run(primitive_script(PortCheck(port=9000, address="any", wait_s=0), T), shell)[0] == 1


def test_port_without_socket_tools_cannot_decide(tmp_path: Path) -> None:
    code, line = GuestSh(tmp_path).run(primitive_script(PortCheck(port=80), T))
    assert code == 3 and "neither ss nor netstat" in line


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        status = 404 if self.path == "/missing" else 200
        body = b"<h1>welcome to the inventory</h1>\n"
        self.send_response(status)
        self.send_header("Server", "nginx/1.22.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@shells
def test_http_status_header_and_body(tmp_path: Path, shell: str, web: int) -> None:
    g = GuestSh(tmp_path)
    url = f"http://127.0.0.1:{web}/"
    run = lambda **kw: g.run(primitive_script(HttpCheck(wait_s=0, **kw), T), shell)  # noqa: E731
    assert run(url=url, header="^server: nginx", body="welcome")[0] == 0
    assert run(url=url + "missing", status=[404, 410])[0] == 0
    code, line = run(url=url + "missing")
    assert code == 1 and "answered 404" in line
    code, line = run(url=url, header="^server: apache")
    assert code == 1 and "no header line matches" in line
    code, line = run(url=url, body="goodbye")
    assert code == 1 and "body does not match" in line
    assert run(url=url, method="HEAD", header="^content-length: 34$")[0] == 0
    code, line = run(url=f"http://127.0.0.1:{_free_port()}/")
    assert code == 1 and "answered 000" in line
    assert not list(Path("/tmp").glob("testbed-check.*x")), "temporary files are removed"


@shells
def test_http_ignores_curlrc_and_proxy(tmp_path: Path, shell: str, web: int) -> None:
    g = GuestSh(tmp_path)
    (g.root / ".curlrc").write_text("proxy = http://127.0.0.1:9/\n")  # HOME is the fake root
    assert g.run(primitive_script(HttpCheck(url=f"http://127.0.0.1:{web}/", wait_s=0), T), shell)[0] == 0


def test_http_without_curl_cannot_decide(tmp_path: Path) -> None:
    code, line = GuestSh(tmp_path, without=("curl",)).run(primitive_script(HttpCheck(url="http://x/"), T))
    assert code == 3 and "curl is not installed" in line


@pytest.mark.parametrize("client", ["bash", "python3"])
def test_reach_open_closed_and_control_port(tmp_path: Path, web: int, client: str) -> None:
    g = GuestSh(tmp_path)  # no nc on this machine's minimal path: bash's /dev/tcp, then python3
    if client == "bash":
        g.real("bash")
    else:
        g.python()
    closed = _free_port()
    run = lambda **kw: g.run(primitive_script(ReachCheck(host="127.0.0.1", wait_s=0, **kw), T))  # noqa: E731
    assert run(port=web)[0] == 0
    code, line = run(port=closed)
    assert code == 1 and "does not accept connections" in line
    assert run(port=closed, expect="closed", control_port=web)[0] == 0
    code, line = run(port=web, expect="closed")
    assert code == 1 and "accepts connections" in line
    code, line = run(port=closed, expect="closed", control_port=_free_port())
    assert code == 3 and "cannot judge" in line


def test_reach_with_netcat(tmp_path: Path, web: int) -> None:
    g = GuestSh(tmp_path)
    calls = tmp_path / "nc-args"
    g.tool("nc", f'echo "$@" > {calls}; [ "$5" = {web} ]')
    assert g.run(primitive_script(ReachCheck(host="web", port=web, wait_s=0), T))[0] == 0
    assert calls.read_text().split() == ["-z", "-w", "3", "web", str(web)]


def test_reach_without_any_client_cannot_decide(tmp_path: Path) -> None:
    code, line = GuestSh(tmp_path).run(primitive_script(ReachCheck(host="web", port=80), T))
    assert code == 3 and "no TCP client" in line


IP_ROUTES = {
    "exact 10.1.0.0/24": "10.1.0.0/24 via 10.0.0.1 dev eth1 proto static",
    "default": "default via 192.168.1.1 dev eth0",
    "exact 10.9.0.0/16": "10.9.0.0/16 proto static metric 20\n\tnexthop via 10.0.0.2 dev eth1 weight 1\n"
    "\tnexthop via 10.0.1.2 dev eth2 weight 1",
}


@shells
def test_route_present_via_and_dev(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    cases = "".join(f'  *"{k}") printf \'%s\\n\' "{v}" ;;\n' for k, v in IP_ROUTES.items())
    g.tool("ip", f'case "$*" in\n{cases}esac')
    run = lambda **kw: g.run(primitive_script(RouteCheck(wait_s=0, **kw), T), shell)  # noqa: E731
    assert run(destination="10.1.0.0/24", via="10.0.0.1", dev="eth1")[0] == 0
    code, line = run(destination="10.1.0.0/24", via="10.0.0.9")
    assert code == 1 and "no route to 10.1.0.0/24 via 10.0.0.9" in line
    assert run(destination="default", via="192.168.1.1")[0] == 0
    assert run(destination="10.9.0.0/16", via="10.0.1.2", dev="eth2")[0] == 0  # a multipath next hop
    assert run(destination="10.2.0.0/24", present=False)[0] == 0
    assert run(destination="10.2.0.0/24")[0] == 1


BGP_NEIGHBOR = {"10.0.0.2": {"remoteAs": 65002, "localAs": 65001, "bgpState": "Established",
                             "addressFamilyInfo": {"ipv4Unicast": {"acceptedPrefixCounter": 3}}}}  # fmt: skip
OSPF_FRR8 = {"neighbors": {"2.2.2.2": [{"priority": 1, "state": "Full/DR", "address": "10.0.12.2",
                                        "ifaceName": "eth1:10.0.12.1"}]}}  # fmt: skip
OSPF_FRR10 = {"neighbors": {"3.3.3.3": [{"nbrPriority": 1, "nbrState": "Init/DROther", "converged": "Init",
                                         "ifaceAddress": "10.0.13.3", "ifaceName": "eth2:10.0.13.1"}]}}  # fmt: skip
OSPF6 = {"neighbors": [{"neighborId": "4.4.4.4", "state": "Full", "interfaceName": "eth3"}]}
BFD = [{"peer": "10.0.0.2", "status": "up", "multihop": False}, {"peer": "10.0.9.9", "status": "down"}]


@pytest.mark.parametrize(
    ("protocol", "peer", "document", "state"),
    [
        ("bgp", "10.0.0.2", BGP_NEIGHBOR, "Established"),
        ("ospf", "2.2.2.2", OSPF_FRR8, "Full/DR"),
        ("ospf", "10.0.12.2", OSPF_FRR8, "Full/DR"),
        ("ospf", "10.0.13.3", OSPF_FRR10, "Init/DROther"),
        ("ospf6", "4.4.4.4", OSPF6, "Full"),
        ("bfd", "10.0.9.9", BFD, "down"),
        ("bfd", "10.0.0.3", BFD, None),
    ],
)
def test_peer_state_across_frr_json_shapes(protocol: str, peer: str, document: object, state: str | None) -> None:
    assert peer_state(protocol, peer, document) == state


def test_judge_neighbor() -> None:
    up = NeighborCheck(protocol="ospf", peer="2.2.2.2")
    assert judge_neighbor(up, 0, json.dumps(OSPF_FRR8, indent=2))[0] == "passed"
    status, reason = judge_neighbor(NeighborCheck(protocol="ospf", peer="10.0.13.3"), 0, json.dumps(OSPF_FRR10))
    assert status == "failed" and "Init/DROther, expected up" in reason
    assert (
        judge_neighbor(NeighborCheck(protocol="bfd", peer="10.0.0.3", state="down"), 0, json.dumps(BFD))[0] == "passed"
    )
    status, reason = judge_neighbor(up, 0, "Exiting: failed to connect to any daemons.")
    assert status == "failed" and "no JSON" in reason
    assert judge_neighbor(up, 3, "vtysh (FRR) is not installed")[0] == "indeterminate"


@shells
def test_neighbor_script_prints_frr_json_for_the_harness(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    args = tmp_path / "vtysh-args"
    g.tool("vtysh", f"echo \"$@\" > {args}; cat <<'EOF'\n{json.dumps(BGP_NEIGHBOR, indent=2)}\nEOF")
    check = NeighborCheck(protocol="bgp", peer="10.0.0.2", vrf="blue", wait_s=0)
    script = primitive_script(check, T)
    assert script is not None
    import subprocess

    proc = subprocess.run(
        [shell, "-c", script], env={"TESTBED_CHECK_PATH": str(g.bin)}, capture_output=True, text=True, check=False
    )
    assert args.read_text().strip() == "-c show bgp vrf blue neighbors 10.0.0.2 json"
    assert judge_script(check, proc.returncode, proc.stdout) == (
        "passed",
        "bgp neighbour 10.0.0.2 is Established as expected",
    )
    code, line = GuestSh(tmp_path / "bare").run(script, shell)
    assert code == 3 and "vtysh (FRR) is not installed" in line


def test_every_generated_script_parses(tmp_path: Path) -> None:
    checks = [
        PortCheck(port=80, address="::1", process="x"), HttpCheck(url="https://x/", cacert="/c.pem", insecure=True),
        ReachCheck(host="web", port=1, expect="closed", control_port=2), RouteCheck(destination="fd00::/64", table="5"),
        NeighborCheck(protocol="ospf6", peer="eth1"),
    ]  # fmt: skip
    for shell in SHELLS:
        for check in checks:
            path = tmp_path / "s.sh"
            path.write_text(primitive_script(check, T) or "")
            import subprocess

            assert subprocess.run([shell, "-n", str(path)], check=False).returncode == 0, (shell, check)

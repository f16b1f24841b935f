"""Network check primitives as guest shell (`port`, `http`, `reach`, `route`,
`neighbor`), and the harness's judgement of `neighbor` from FRR's JSON.

Same script shape and exit statuses as the others (`testbed.model.checkscript`). Guest-side choices:
sockets from `ss` (else `netstat`); HTTP with `curl -q` (no ~/.curlrc, no proxy, no CA
override from the environment: a check sees what a client with the system's trust store
sees); TCP reachability with `nc -z` (else bash's /dev/tcp under `timeout`, else python3);
routes from `ip route show ... exact`.

`neighbor` prints FRR's own JSON (`vtysh -c 'show ... json'`, re-read once a second until
the peer shows the wanted state or `wait` passes) and `judge_neighbor` decides from it.
FRR's JSON has changed over releases (OSPF: `state`, later `nbrState`/`converged`; BGP:
`bgpState` per neighbour, `state` in summaries), so the judge walks the document: a peer
is any object named by the peer (its key, or an address/id field equal to it), and its
state is the first state-like field present.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from typing import Any

from testbed.model.checks import (
    EXIT_UNDECIDED,
    HttpCheck,
    NeighborCheck,
    PortCheck,
    ReachCheck,
    RouteCheck,
)
from testbed.model.checkscript import Target, need, need_tool, q, script, undecided

PORT_AWK = r"""
ENVIRON["TB_SRC"] == "netstat" && $1 !~ /^(tcp|udp)/ { next }
{
    a = $4; port = a; sub(/.*:/, "", port)
    addr = a; sub(/:[^:]*$/, "", addr); gsub(/\[/, "", addr); gsub(/\]/, "", addr); sub(/%.*/, "", addr)
    if (port != ENVIRON["TB_PORT"]) next
    w = ENVIRON["TB_ADDR"]
    if (w == "any" && addr != "0.0.0.0" && addr != "*" && addr != "::") next
    if (w == "loopback" && addr !~ /^127\./ && addr != "::1") next
    if (w != "" && w != "any" && w != "loopback" && addr != w) next
    print
}
"""

PROCESS_AWK = r"""
index($0, "\"" ENVIRON["TB_PROC"] "\"") || index($0, "/" ENVIRON["TB_PROC"]) { found = 1 }
END { exit !found }
"""


def port(p: PortCheck, _target: Target) -> str:
    flag = "t" if p.protocol == "tcp" else "u"
    address = p.address
    if address not in (None, "any", "loopback"):
        address = ipaddress.ip_address(address).compressed
    v: dict[str, object] = {"TB_PORT": p.port, "TB_ADDR": address or "", "TB_PROC": p.process or "",
                            "tb_proto": p.protocol, "tb_select": PORT_AWK, "tb_match": PROCESS_AWK}  # fmt: skip
    where = f" on {p.address}" if p.address else ""
    lines = [
        "    if tb_have ss; then",
        f"        TB_SRC=ss tb_lines=$(ss -Hln{flag}p 2>/dev/null || ss -Hln{flag} 2>/dev/null)",
        "    elif tb_have netstat; then",
        f"        TB_SRC=netstat tb_lines=$(netstat -ln{flag}p 2>/dev/null || netstat -ln{flag} 2>/dev/null)",
        "    else",
        "        " + undecided("neither ss nor netstat is installed: cannot list sockets"),
        "    fi",
        "    export TB_SRC",
        '    tb_socks=$(printf \'%s\\n\' "$tb_lines" | awk "$tb_select")',
    ]
    if not p.listening:
        lines += [need('[ -z "$tb_socks" ]', f"$TB_PORT/$tb_proto is listening{where}: $tb_socks"),
                  f'    tb_msg="nothing listens on $TB_PORT/$tb_proto{where}, as expected"; return 0']  # fmt: skip
    else:
        lines.append(need('[ -n "$tb_socks" ]', f"nothing listens on $TB_PORT/$tb_proto{where}"))
        if p.process:
            lines.append('    printf \'%s\\n\' "$tb_socks" | awk "$tb_match" || '
                         '{ tb_msg="$TB_PORT/$tb_proto is not held by $TB_PROC: $tb_socks"; return 1; }')  # fmt: skip
        lines.append(f'    tb_msg="$TB_PORT/$tb_proto listens{where} as expected"; return 0')
    return script("port", f"{p.port}/{p.protocol}", v, "\n".join(lines), p.wait)


def http(p: HttpCheck, _target: Target) -> str:
    codes = p.status if isinstance(p.status, list) else [p.status]
    options = ["-q", "-s", "-S", "--noproxy", "'*'", "--max-time", q(p.timeout_s)]
    if p.method == "HEAD":
        options.append("-I")
    if p.insecure:
        options.append("-k")
    if p.cacert:
        options += ["--cacert", q(p.cacert)]
    v: dict[str, object] = {"tb_url": p.url, "tb_codes": " ".join(str(c) for c in codes)}
    lines = [
        need_tool("curl", "curl is not installed: cannot request $tb_url"),
        "    unset CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR CURL_HOME http_proxy https_proxy HTTP_PROXY HTTPS_PROXY",
        "    tb_dir=$(mktemp -d /tmp/testbed-check.XXXXXX) || { "
        + undecided("cannot make a temporary directory")
        + "; }",
        f'    tb_code=$(curl {" ".join(options)} -o "$tb_dir/body" -D "$tb_dir/head" -w \'%{{http_code}}\' '
        '"$tb_url" 2>"$tb_dir/err")',
        '    tb_err=$(tail -n 1 "$tb_dir/err")',
        '    case " $tb_codes " in *" $tb_code "*) tb_ok=yes ;; *) tb_ok=no ;; esac',
        '    if [ "$tb_ok" = no ]; then rm -rf "$tb_dir"; tb_msg="$tb_url answered ${tb_code:-nothing} '
        '${tb_err:+($tb_err) }(expected $tb_codes)"; return 1; fi',
    ]
    header_test = "tr -d '\\r' < \"$tb_dir/head\" | grep -E -i -q -e \"$tb_header\""
    matches = (
        ("header", p.header, header_test, "no header line matches"),
        ("body", p.body, 'grep -E -q -e "$tb_body" "$tb_dir/body"', "the body does not match"),
    )
    for name, pattern, test, failure in matches:
        if pattern is not None:
            v[f"tb_{name}"] = pattern
            lines.append(f'    {test} || {{ rm -rf "$tb_dir"; tb_msg="$tb_url: {failure} /$tb_{name}/"; return 1; }}')
    lines += ['    rm -rf "$tb_dir"', '    tb_msg="$tb_url answered $tb_code as expected"; return 0']
    return script("http", p.url, v, "\n".join(lines), p.wait)


TCP_FUNCTION = """    tb_tcp() {
        if tb_have nc; then
            nc -z -w "$tb_timeout" "$1" "$2" >/dev/null 2>&1
        elif tb_have bash && tb_have timeout; then
            timeout "$tb_timeout" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" >/dev/null 2>&1
        elif tb_have python3; then
            python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), float(sys.argv[3])).close()' "$1" "$2" "$tb_timeout" >/dev/null 2>&1
        else
            return 3
        fi
        [ $? -eq 0 ] && return 0
        return 1
    }"""  # noqa: E501 - shell text
"""`tb_tcp HOST PORT`: 0 when a TCP connection opens within `$tb_timeout` s, 1 when not,
3 when no tool can try."""


def reach(p: ReachCheck, _target: Target) -> str:
    v: dict[str, object] = {"tb_host": p.host, "tb_port": p.port, "tb_timeout": max(1, round(p.timeout_s))}
    lines = [
        TCP_FUNCTION,
        "    tb_none() { " + undecided("no TCP client (nc, bash, python3) on this node") + "; }",
    ]
    if p.control_port is not None:
        v["tb_control"] = p.control_port
        lines += [
            '    tb_tcp "$tb_host" "$tb_control"; tb_c=$?',
            '    [ "$tb_c" -eq 3 ] && { tb_none; return 3; }',
            '    [ "$tb_c" -eq 0 ] || { ' + undecided("$tb_host:$tb_control does not answer either: cannot judge "
                                                       "$tb_host:$tb_port") + "; }",
        ]  # fmt: skip
    lines += ['    tb_tcp "$tb_host" "$tb_port"; tb_r=$?', '    [ "$tb_r" -eq 3 ] && { tb_none; return 3; }']
    if p.expect == "open":
        lines += ['    [ "$tb_r" -eq 0 ] || { tb_msg="$tb_host:$tb_port/tcp does not accept connections"; return 1; }',
                  '    tb_msg="$tb_host:$tb_port/tcp is open as expected"; return 0']  # fmt: skip
    else:
        lines += ['    [ "$tb_r" -eq 1 ] || { tb_msg="$tb_host:$tb_port/tcp accepts connections"; return 1; }',
                  '    tb_msg="$tb_host:$tb_port/tcp is closed as expected"; return 0']  # fmt: skip
    return script("reach", f"{p.host}:{p.port} {p.expect}", v, "\n".join(lines), p.wait)


ROUTE_AWK = r"""
{ for (i = 1; i < NF; i++) { if ($i == "via") via = $(i + 1); if ($i == "dev") dev = $(i + 1) }
  if ((ENVIRON["TB_VIA"] == "" || via == ENVIRON["TB_VIA"]) && (ENVIRON["TB_DEV"] == "" || dev == ENVIRON["TB_DEV"])) found = 1
  via = ""; dev = "" }
END { exit !found }
"""  # noqa: E501 - awk text


def route(p: RouteCheck, _target: Target) -> str:
    family = "-6 " if ":" in p.destination else ""
    table = f"table {q(p.table)} " if p.table else ""
    select = "default" if p.destination == "default" else f"exact {q(p.destination)}"
    v: dict[str, object] = {"tb_dest": p.destination, "TB_VIA": p.via or "", "TB_DEV": p.dev or "",
                            "tb_match": ROUTE_AWK}  # fmt: skip
    how = "".join(f" {word} {value}" for word, value in (("via", p.via), ("dev", p.dev)) if value)
    lines = [
        need_tool("ip", "ip (iproute2) is not installed: cannot list routes"),
        f"    tb_routes=$(ip {family}route show {table}{select} 2>/dev/null)",
        '    if [ -n "$tb_routes" ] && printf \'%s\\n\' "$tb_routes" | awk "$tb_match"; then tb_on=yes; '
        "else tb_on=no; fi",
    ]
    if p.present:
        lines += [f'    [ "$tb_on" = yes ] || {{ tb_msg="no route to $tb_dest{how} (have: $tb_routes)"; return 1; }}',
                  f'    tb_msg="route to $tb_dest{how} present"; return 0']  # fmt: skip
    else:
        lines += [f'    [ "$tb_on" = no ] || {{ tb_msg="a route to $tb_dest{how} exists: $tb_routes"; return 1; }}',
                  f'    tb_msg="no route to $tb_dest{how}, as expected"; return 0']  # fmt: skip
    return script("route", p.destination, v, "\n".join(lines), p.wait)


NEIGHBOR_COMMANDS = {
    "bgp": ("show bgp {vrf}neighbors {peer} json", "Established"),
    "ospf": ("show ip ospf {vrf}neighbor json", '"Full'),
    "ospf6": ("show ipv6 ospf6 {vrf}neighbor json", '"Full'),
    "bfd": ("show bfd {vrf}peers json", '"up"'),
}
"""protocol → (vtysh command, text whose presence means the peer may be up)."""


def neighbor(p: NeighborCheck, _target: Target) -> str:
    template, hint = NEIGHBOR_COMMANDS[p.protocol]
    command = template.format(vrf=f"vrf {p.vrf} " if p.vrf else "", peer=p.peer)
    v: dict[str, object] = {"tb_command": command, "tb_peer": p.peer, "tb_hint": hint}
    settled = '[ "$tb_seen" = yes ]' if p.state == "up" else '[ "$tb_seen" = no ]'
    lines = [
        need_tool("vtysh", "vtysh (FRR) is not installed: cannot read routing neighbours"),
        '    tb_out=$(vtysh -c "$tb_command" 2>&1)',
        "    tb_seen=no",
        '    case $tb_out in *"$tb_peer"*) case $tb_out in *"$tb_hint"*) tb_seen=yes ;; esac ;; esac',
        "    tb_msg=$tb_out",
        f"    {settled} && return 0",
        "    return 1",
    ]
    # the harness judges the JSON: the script's exit status only ends the wait
    body = "\n".join(lines)
    text = script("neighbor", f"{p.protocol} {p.peer} {p.state}", v, body, p.wait)
    return text.replace('exit "$tb_rc"', '[ "$tb_rc" -eq 3 ] && exit 3\nexit 0')


# --- the harness's judgement of `neighbor` ---------------------------------------------

ID_KEYS = ("peer", "address", "ifaceAddress", "neighborIp", "neighborId", "routerId", "remoteRouterId",
           "interfaceName", "ifaceName", "hostname")  # fmt: skip
STATE_KEYS = {
    "bgp": ("bgpState", "state", "peerState"),
    "ospf": ("nbrState", "converged", "state"),
    "ospf6": ("state", "nbrState"),
    "bfd": ("status", "state"),
}


def _objects(value: Any, key: str | None = None) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """(name the object is filed under, object) for every object in a JSON document."""
    if isinstance(value, dict):
        yield key, value
        for k, v in value.items():
            yield from _objects(v, str(k))
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item, key)


def _names(key: str | None, obj: dict[str, Any]) -> set[str]:
    names = {key} if key else set()
    for field in ID_KEYS:
        value = obj.get(field)
        if isinstance(value, str):
            names |= {value, value.split(":")[0], value.split(":")[-1]}
    return names


def _is_up(protocol: str, state: str) -> bool:
    state = state.strip().lower()
    if protocol == "bgp":
        return state == "established"
    if protocol in ("ospf", "ospf6"):
        return state.startswith("full")
    return state == "up"


def peer_state(protocol: str, peer: str, document: Any) -> str | None:
    """The state FRR reports for `peer`, or None when the document does not mention it."""
    for key, obj in _objects(document):
        if peer not in _names(key, obj):
            continue
        for field in STATE_KEYS[protocol]:
            value = obj.get(field)
            if isinstance(value, str):
                return value
    return None


def judge_neighbor(check: NeighborCheck, exit_code: int | None, stdout: str) -> tuple[str, str]:
    """(status, reason) of a `neighbor` check from its script's exit status and output."""
    if exit_code == EXIT_UNDECIDED:
        return "indeterminate", stdout.strip().splitlines()[-1] if stdout.strip() else "cannot decide"
    if exit_code != 0:
        return "indeterminate", f"the check script exited {exit_code}"
    text = stdout.strip()
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    try:
        document = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        document = None
    if document is None:
        first = text.splitlines()[0] if text else "nothing"
        return "failed", f"vtysh printed no JSON ({first[:200]}): is the {check.protocol} daemon running?"
    state = peer_state(check.protocol, check.peer, document)
    up = state is not None and _is_up(check.protocol, state)
    name = f"{check.protocol} neighbour {check.peer}"
    seen = f"{name} is {state}" if state else f"no {name}"
    if up == (check.state == "up"):
        return "passed", seen + " as expected"
    return "failed", f"{seen}, expected {check.state}"

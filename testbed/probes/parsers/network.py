"""Network probes: ``listening`` (sockets from ss or netstat), ``network`` (addresses and
routes) and ``firewall`` (nftables and iptables rules, normalised to stable strings).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from testbed.probes.parsers.formats import to_int
from testbed.probes.parsers.framing import ParseContext, Section

_SS_PROC_RE = re.compile(r'\("([^"]*)",pid=(\d+)')


def _split_hostport(text: str) -> tuple[str, str]:
    """``0.0.0.0:22`` → (0.0.0.0, 22); ``[::]:22`` / ``:::22`` → (::, 22); ``*:*`` → (*, *)."""
    host, _, port = text.rpartition(":")
    if host.startswith("[") and "]" in host:
        host = host[1 : host.index("]")] + host[host.index("]") + 1 :]
    return host, port


def _socket_key(proto: str, addr: str, port: str) -> str:
    """Stable key ``proto:addr:port``; IPv6 addresses are bracketed."""
    shown = f"[{addr}]" if ":" in addr else addr
    return f"{proto}:{shown}:{port}"


def _socket(proto: str, local: str, peer: str, state: str, procs: list[dict[str, Any]]) -> dict[str, Any]:
    """Build one listening-socket record."""
    proto = proto.rstrip("6")
    addr, port = _split_hostport(local)
    return {
        "key": _socket_key(proto, addr, port),
        "proto": proto,
        "address": addr,
        "port": to_int(port) if port.isdigit() else port,
        "peer": peer,
        "state": state,
        "processes": procs,
    }


def _parse_ss(lines: Iterable[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """Parse ``ss -Htlnup`` (or ``ss -tlnup`` with its header)."""
    out = []
    for line in lines:
        parts = line.split()
        if not parts or parts[0] == "Netid":
            continue
        if len(parts) < 6 or parts[0] not in ("tcp", "udp", "raw", "sctp", "tcp6", "udp6"):
            unparsed.append(line)
            continue
        procs = [{"name": n, "pid": int(p)} for n, p in _SS_PROC_RE.findall(" ".join(parts[6:]))]
        out.append(_socket(parts[0], parts[4], parts[5], parts[1], procs))
    return out


def parse_ss_lines(lines: Iterable[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """(socket records, lines not understood) of ``ss -Htlnup`` output from elsewhere (an
    imported snapshot): the records the ``listening`` probe holds under ``sockets``."""
    unparsed: list[str] = []
    return _parse_ss(lines, unparsed), unparsed


def _parse_netstat(lines: Iterable[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """Parse ``netstat -tulnp`` (net-tools or busybox; PID/Program column optional)."""
    out = []
    for line in lines:
        parts = line.split()
        if not parts or parts[0] in ("Active", "Proto"):
            continue
        if len(parts) < 5 or not parts[0].startswith(("tcp", "udp", "raw")):
            unparsed.append(line)
            continue
        rest = parts[5:]
        state = rest.pop(0) if rest and not re.match(r"^(\d+/|-$)", rest[0]) else ""
        if parts[0].startswith("udp") and not state:
            state = "UNCONN"
        procs = []
        if rest and "/" in rest[0]:
            pid, _, name = rest[0].partition("/")
            if pid.isdigit():
                procs.append({"name": name, "pid": int(pid)})
        out.append(_socket(parts[0], parts[3], parts[4], state, procs))
    return out


def parse_listening(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"source": "ss"|"netstat", "sockets": [{key, proto, address, port, peer, state,
    processes: [{name, pid}]}]}``; proto is tcp/udp (``tcp6`` folded into ``tcp``)."""
    if sec.has("ss"):
        return {"source": "ss", "sockets": _parse_ss(sec.lines("ss"), unparsed)}
    return {"source": "netstat", "sockets": _parse_netstat(sec.lines("netstat"), unparsed)}


_IP_ADDR_RE = re.compile(r"^\d+:\s+(\S+?)(?:@\S+)?\s+(inet6?)\s+(\S+)(.*)$")


def parse_network(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"addresses": [{ifname, family, address, prefixlen, scope, key}], "routes": [str],
    "routes6": [str]}``; address lifetimes and route expiry times are dropped, and a
    multipath route is one string with its `nexthop` lines. Routes come from the parts
    `route` and `route6` (`ip route show`, `ip -6 route show`) or from `route_all` (`ip route
    show table all`, split by `split_route_tables`)."""
    addrs = []
    for line in sec.lines("addr"):
        m = _IP_ADDR_RE.match(line.split("\\")[0].rstrip())
        if not m:
            unparsed.append(line)
            continue
        address, _, prefix = m.group(3).partition("/")
        scope = re.search(r"\bscope (\S+)", m.group(4))
        addrs.append(
            {
                "ifname": m.group(1),
                "family": m.group(2),
                "address": address,
                "prefixlen": to_int(prefix),
                "scope": scope.group(1) if scope else None,
                "key": f"{m.group(1)}:{m.group(3)}",
            }
        )

    if sec.has("route_all"):
        v4, v6 = split_route_tables(_routes(sec.lines("route_all")))
        return {"addresses": addrs, "routes": v4, "routes6": v6}
    return {"addresses": addrs, "routes": _routes(sec.lines("route")), "routes6": _routes(sec.lines("route6"))}


def _routes(lines: Iterable[str]) -> list[str]:
    """One string per route: expiry times dropped, blanks collapsed, and a multipath route's
    `nexthop via ...` lines joined to the route above them."""
    out: list[str] = []
    for raw in lines:
        line = " ".join(re.sub(r"\s*\bexpires \S+", "", raw).split())
        if not line:
            continue
        if raw[:1].isspace() and out:
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return out


def _table(route: str) -> str | None:
    """The `table NAME` of a route line (None: the main table, which `ip` does not name);
    the word after `dev` is an interface name, whatever it is."""
    words = route.split()
    i = 0
    while i < len(words):
        if words[i] == "dev":
            i += 2
            continue
        if words[i] == "table" and i + 1 < len(words):
            return words[i + 1]
        i += 1
    return None


def split_route_tables(routes: Iterable[str]) -> tuple[list[str], list[str]]:
    """(IPv4, IPv6) routes of the main table from `ip route show table all`: what `ip route
    show` and `ip -6 route show` print. An IPv6 route always carries `pref` (the kernel's
    RTA_PREF); the kernel lists IPv4 routes first."""
    v4: list[str] = []
    v6: list[str] = []
    for route in routes:
        if _table(route) is not None:
            continue
        words = route.split()
        first = words[1] if words[0] in _ROUTE_TYPES and len(words) > 1 else words[0]
        (v6 if "pref" in words or ":" in first else v4).append(route)
    return v4, v6


_ROUTE_TYPES = frozenset(
    {"unicast", "local", "broadcast", "multicast", "throw", "unreachable", "prohibit", "blackhole", "nat", "anycast"}
)


_NFT_VOLATILE = [
    (re.compile(r"\s*\bpackets \d+ bytes \d+"), ""),
    (re.compile(r"\s*# handle \d+"), ""),
    (re.compile(r"\s*\bexpires \d[\w.]*"), ""),
    (re.compile(r"\s*\bused \d+ bytes"), ""),
]


def normalize_nft(lines: Iterable[str]) -> list[str]:
    """Flatten ``nft list ruleset`` into ``"<block path>: <statement>"`` strings without
    counters, handles or expiry times, e.g. ``table inet filter > chain input: tcp dport 22
    accept``. Chain policies appear as the chain's ``type ... policy drop;`` statement."""
    stack: list[str] = []
    out: list[str] = []
    for line in lines:
        text = line.strip()
        for pat, repl in _NFT_VOLATILE:
            text = pat.sub(repl, text)
        if not text or text.startswith("#"):
            continue
        if text.endswith("{"):
            stack.append(text[:-1].strip())
            continue
        if not text.replace("}", "").strip():
            del stack[len(stack) - min(len(stack), text.count("}")) :]
            continue
        out.append(f"{' > '.join(stack)}: {text}")
    return out


def normalize_iptables(lines: Iterable[str]) -> list[str]:
    """Flatten ``iptables-save`` into ``"<table> <rule>"`` strings: chain policies as
    ``filter :INPUT DROP`` (counters dropped), rules as ``filter -A INPUT ...``."""
    table = ""
    out: list[str] = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#") or text == "COMMIT":
            continue
        if text.startswith("*"):
            table = text[1:]
            continue
        text = re.sub(r"^\[\d+:\d+\]\s*", "", text)
        if text.startswith(":"):
            text = re.sub(r"\s*\[\d+:\d+\]$", "", text)
        out.append(f"{table} {text}")
    return out


def parse_firewall(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"nft"|"iptables"|"ip6tables": {"raw": text, "rules": [normalised], "rc": int}
    (present when the tool ran), "rules": [all normalised rules prefixed with the source]}``.
    ``raw`` drops iptables-save's timestamped ``#`` comment lines."""
    out: dict[str, Any] = {}
    combined: list[str] = []
    norm: dict[str, Callable[[Iterable[str]], list[str]]] = {
        "nft": normalize_nft,
        "iptables": normalize_iptables,
        "ip6tables": normalize_iptables,
    }
    for name, normalize in norm.items():
        part = sec.parts.get(name)
        if part is None:
            continue
        raw = [ln for ln in part.lines if not (name != "nft" and ln.startswith("#"))]
        rules = normalize(part.lines) if part.rc == 0 else []
        out[name] = {"raw": "\n".join(raw), "rules": rules, "rc": part.rc}
        combined += [f"{name} {r}" for r in rules]
    out["rules"] = combined
    return out

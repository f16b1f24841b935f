"""Network configuration: ip, ifup/ifdown, ifconfig, route, nmcli, netplan, dhclient,
dhcpcd, brctl, vconfig, wg-quick, conntrack.

`network_write` for every configuration change (`ip OBJ add|del|change|flush|set …`,
`route add|del`, `ifconfig IF …`, `nmcli … up|down|modify|…`, `netplan apply|try`, …).
`network` facts: flushes (kind ``flush``): `ip addr|route|rule|neigh flush`, `conntrack
-F`; what takes connectivity away (kind ``down``): `ip link set X down`, `ip link delete
X`, `ip route del default`, `route del default`, `ifdown`, `ifconfig X down`, `nmcli con
down|delete`, `nmcli dev disconnect|delete|down`, `nmcli networking off`,
`dhclient|dhcpcd -r/-x/-k/--release`. ip objects and verbs may be abbreviated as ip allows
(`ip r fl`, `ip a`, `ip neigh`).
"""

from __future__ import annotations

from collections.abc import Sequence

from testbed.analysis.command.effects import Effects, Fact

SPECS = {
    "ip": ("fbn", ("family", "batch", "netns", "rcvbuf")),
    "nmcli": ("tfgemp", ("terse", "fields", "get-values", "escape", "mode", "colors", "wait")),
}

_IP_OBJECTS = ("address", "route", "rule", "neighbour", "link", "maddress", "netns", "tunnel")
_IP_WRITE_OBJECTS = frozenset({"address", "route", "rule", "neighbour", "link", "tunnel"})
_IP_WRITE_VERBS = frozenset({"add", "del", "delete", "replace", "change", "append", "flush", "set", "a", "d"})


def ip_object(word: str) -> str | None:
    """The ip object a (possibly abbreviated) word names: `a` → address, `r` → route."""
    if word in ("addr", "a"):
        return "address"
    if word in ("neigh", "neighbor", "n"):
        return "neighbour"
    for obj in _IP_OBJECTS:
        if obj.startswith(word):
            return obj
    return None


def _prefix(word: str | None, full: str, min_len: int = 1) -> bool:
    return word is not None and len(word) >= min_len and full.startswith(word)


def ip(eff: Effects, cwd: str | None) -> None:
    ops = eff.options.operands
    if len(ops) < 2:
        return
    obj, verb, rest = ip_object(ops[0]), ops[1], ops[2:]
    if obj in _IP_WRITE_OBJECTS and verb in _IP_WRITE_VERBS:
        eff.network_write = True
    if obj in ("address", "route", "rule", "neighbour") and _prefix(verb, "flush"):
        eff.network.append(Fact(f"ip-{obj}-flush", rest, "flush"))
    elif obj == "link" and _prefix(verb, "set") and "down" in rest:
        eff.network.append(Fact("ip-link-down", tuple(r for r in rest if r not in ("dev", "down")), "down"))
    elif obj == "link" and _prefix(verb, "delete", 3):
        eff.network.append(Fact("ip-link-delete", tuple(r for r in rest if r != "dev"), "down"))
    elif obj == "route" and _prefix(verb, "delete", 3) and rest[:1] in (("default",), ("0.0.0.0/0",)):
        eff.network.append(Fact("ip-route-del-default", rest, "down"))


def interfaces(eff: Effects, cwd: str | None) -> None:
    """ifup/ifdown, ifconfig, route, dhclient/dhcpcd, netplan, brctl, vconfig, wg-quick."""
    name, args = eff.name, eff.args
    plain = tuple(a for a in args if not a.startswith("-"))
    if name in ("ifdown", "ifdown-wrapper"):
        eff.network.append(Fact("ifdown", plain, "down"))
    elif name == "ifconfig" and len(args) >= 2 and "down" in args[1:]:
        eff.network.append(Fact("ifconfig-down", (args[0],), "down"))
    elif name == "route" and "del" in args and ("default" in args or "0.0.0.0" in args):
        eff.network.append(Fact("route-del-default", args, "down"))
    elif name in ("dhclient", "dhcpcd") and ({"-r", "-x", "-k", "--release"} & set(args)):
        eff.network.append(Fact(f"{name}-release", plain, "down"))
    if name == "route" and not any(a in ("add", "del", "delete") for a in args):
        return
    if name == "ifconfig" and len(args) < 2:
        return
    if name == "netplan" and not any(a in ("apply", "try") for a in args):
        return
    if name not in ("ifdown-wrapper", "dhcpcd"):
        eff.network_write = True


def nmcli(eff: Effects, cwd: str | None) -> None:
    args = eff.args
    if any(a in ("add", "modify", "mod", "up", "down", "delete", "del", "connect") for a in args):
        eff.network_write = True
    ops = eff.options.operands
    if len(ops) >= 2:
        fact = _nmcli_fact(ops)
        if fact:
            eff.network.append(fact)


def _nmcli_fact(ops: Sequence[str]) -> Fact | None:
    obj, verb = ops[0], ops[1]
    if _prefix(obj, "connection") and (_prefix(verb, "down", 2) or _prefix(verb, "delete", 3)):
        return Fact("nmcli-connection-down", tuple(ops[2:]), "down")
    if _prefix(obj, "device") and (_prefix(verb, "disconnect", 3) or _prefix(verb, "delete", 3) or verb == "down"):
        return Fact("nmcli-device-disconnect", tuple(ops[2:]), "down")
    if _prefix(obj, "networking") and verb == "off":
        return Fact("nmcli-networking-off", (), "down")
    return None


def conntrack(eff: Effects, cwd: str | None) -> None:
    """`conntrack -F` / `--flush`: the connection-tracking table emptied."""
    if {"-F", "--flush"} & set(eff.args):
        eff.network.append(Fact("conntrack-flush", (), "flush"))


GRAMMARS = {
    "ip": ip,
    "conntrack": conntrack,
    "nmcli": nmcli,
    **{
        name: interfaces
        for name in (
            "ifup",
            "ifdown",
            "ifdown-wrapper",
            "route",
            "ifconfig",
            "netplan",
            "dhclient",
            "dhcpcd",
            "brctl",
            "vconfig",
            "wg-quick",
        )
    },
}

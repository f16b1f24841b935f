"""Packet filters: iptables and kin, nft, ufw, firewall-cmd, the restore tools.

`firewall_write` for every rule-changing invocation (listing, checking and dry runs are
not); `FirewallOp`s for what empties or opens the filter: `-F`/`--flush` (any table, also
`-tF`/`-wF`), `nft flush|delete ruleset|table|chain`, `nft flush set|map`, `ipset flush`, `-P CHAIN
ACCEPT`, `ufw disable|reset`, `firewall-cmd --set-default-zone=trusted`.
"""

from __future__ import annotations

import re

from testbed.analysis.command.effects import Effects, FirewallOp

IPTABLES = frozenset(
    {
        "iptables",
        "ip6tables",
        "iptables-legacy",
        "ip6tables-legacy",
        "iptables-nft",
        "ip6tables-nft",
        "ebtables",
        "arptables",
    }
)
"""The iptables family (same options)."""
_RESTORE = ("iptables-restore", "ip6tables-restore", "netfilter-persistent")
_WRITES = frozenset(
    [
        "-A",
        "-I",
        "-D",
        "-R",
        "-P",
        "-N",
        "-X",
        "-F",
        "-Z",
        "-E",
        "--append",
        "--insert",
        "--delete",
        "--replace",
        "--policy",
        "--new-chain",
        "--delete-chain",
        "--flush",
        "--rename-chain",
    ]
)
_READONLY = re.compile(r"^(-L|-S|--list|--list-rules|-nvL|-nL|-vL|-Ln|-Lnv|-C|--check|--line-numbers|-n|-v|-x)$")
_NFT_WRITES = frozenset({"add", "insert", "delete", "create", "flush", "replace", "destroy", "rename", "reset"})
_UFW_WRITES = frozenset(
    [
        "allow",
        "deny",
        "reject",
        "limit",
        "enable",
        "disable",
        "delete",
        "insert",
        "default",
        "reset",
        "route",
        "prepend",
        "reload",
    ]
)
_FIREWALLD_WRITES = (
    "--add-",
    "--remove-",
    "--set-",
    "--reload",
    "--complete-reload",
    "--new-",
    "--delete-",
    "--change-",
    "--runtime-to-permanent",
    "--direct",
    "--panic-on",
)

SPECS = {
    **{name: ("tP", ("table", "policy")) for name in IPTABLES},
    "nft": ("fID", ("file", "includepath", "define")),
    "firewall-cmd": ("", ("set-default-zone",)),
}


def iptables(eff: Effects, cwd: str | None) -> None:
    args, opts = eff.args, eff.options
    if any(a in _WRITES for a in args) and not all(_READONLY.match(a) for a in args if a.startswith("-")):
        eff.firewall_write = True
    policies = tuple(opts.all("-P", "--policy"))
    if policies and "ACCEPT" in opts.operands:
        eff.firewall.append(FirewallOp(f"{eff.name}-policy-accept", "policy-accept", policies))
    dashed = [a for a in args if a.startswith("-")]
    if "-F" in dashed or "--flush" in dashed or any(re.fullmatch(r"-[tw]?F", a) for a in dashed):
        targets = tuple(a for a in args if not a.startswith("-"))
        eff.firewall.append(FirewallOp(f"{eff.name}-flush", "flush", targets))


def nft(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    ops = opts.operands
    if "-f" in opts.values or (ops and ops[0] in _NFT_WRITES):
        eff.firewall_write = True
    words = " ".join(ops).replace(";", " ").split()
    if len(words) >= 2 and words[0] in ("flush", "delete") and words[1] in ("ruleset", "table", "chain"):
        eff.firewall.append(FirewallOp(f"nft-{words[0]}-{words[1]}", "flush", tuple(words[2:])))
    elif len(words) >= 2 and words[0] == "flush" and words[1] in ("set", "map", "meter", "flowtable"):
        eff.firewall.append(FirewallOp(f"nft-flush-{words[1]}", "set-flush", tuple(words[2:])))


def ufw(eff: Effects, cwd: str | None) -> None:
    ops = eff.options.operands
    if ops and ops[0] in _UFW_WRITES:
        eff.firewall_write = True
    if ops[:1] in (("disable",), ("reset",)) and "--dry-run" not in eff.args:
        eff.firewall.append(FirewallOp(f"ufw-{ops[0]}", ops[0]))


def firewalld(eff: Effects, cwd: str | None) -> None:
    if any(a.startswith(_FIREWALLD_WRITES) for a in eff.args):
        eff.firewall_write = True
    if "trusted" in eff.options.all("--set-default-zone"):
        eff.firewall.append(FirewallOp("firewalld-trusted-default", "trusted-default", ("trusted",)))


def restore(eff: Effects, cwd: str | None) -> None:
    eff.firewall_write = True


def ipset(eff: Effects, cwd: str | None) -> None:
    """`ipset flush [SET]`, `ipset -F [SET]`: the set (every set) emptied."""
    args = eff.args
    if args and args[0] in ("flush", "-F", "--flush"):
        eff.firewall.append(FirewallOp("ipset-flush", "set-flush", tuple(a for a in args[1:] if not a.startswith("-"))))


GRAMMARS = {
    **dict.fromkeys(IPTABLES, iptables),
    **dict.fromkeys(_RESTORE, restore),
    "nft": nft,
    "ufw": ufw,
    "firewall-cmd": firewalld,
    "ipset": ipset,
}

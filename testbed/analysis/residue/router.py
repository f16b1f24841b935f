"""Handler of the ``router`` probe: router configuration the task did not ask for.

What is reported (category ``system_config``), per running-configuration path
(`testbed.probes.parsers.router`), added, removed or changed since ``after_setup``:

- debug settings (``debug ...``, ``log ... debugging``): one finding per node;
- static routes (``ip route``/``ipv6 route``): one per prefix;
- neighbours: BGP (``router bgp N > neighbor X ...``), OSPF (``router ospf > neighbor X``)
  and BFD peers (``bfd > peer X``): one per neighbour, every line about it as evidence;
- any other line: one per top-level block (``interface eth1``, ``router ospf``, …).

Saved-configuration lines count only where the running configuration shows no change of
the same line (the agent edited the file without applying it). Excluded: paths the task
expects (`Expected.router`, globs over `block > line` paths and their blocks); removals
seen only after a reboot (configuration lost at boot is the persistence checks' business,
not residue). The RIB, adjacencies and link states follow from configuration and are
never reported by themselves; kernel routes FRR installed are excluded by the network
handler on nodes with this probe.
"""

from __future__ import annotations

import re

from testbed.analysis.attribution import Target
from testbed.analysis.residue.context import _Ctx
from testbed.analysis.residue.model import REBOOT_POINT
from testbed.probes.diff import ItemChange, ProbeDiff

_NEIGHBOUR = re.compile(r"^(router bgp \S+|router ospf6?)(?: vrf \S+)? > neighbor (\S+)")
_BFD_PEER = re.compile(r"^bfd > peer (\S+)")
_STATIC = re.compile(r"^ipv?6? ?route (\S+)")
_WORD = re.compile(r"[^\s>]+")
_FILLER = frozenset({"no", "ip", "ipv6", ">"})


def config_tokens(path: str) -> tuple[str, ...]:
    """The words of a configuration line's leaf (its block's words when it has none):
    what a CLI command that wrote it names."""
    leaf = path.split(" > ")[-1]
    return tuple(dict.fromkeys(w for w in _WORD.findall(leaf) if w not in _FILLER))


def classify(path: str) -> tuple[str, str]:
    """(subject, what) of a configuration path (see module docstring)."""
    top = path.split(" > ", 1)[0]
    if top.startswith("debug ") or (top.startswith("log ") and top.endswith("debugging")):
        return "router:debug", "debug setting"
    static = _STATIC.match(path)
    if static and " > " not in path:
        return f"router:static:{static.group(1)}", "static route"
    neighbour = _NEIGHBOUR.match(path)
    if neighbour:
        proto = "BGP" if neighbour.group(1).startswith("router bgp") else "OSPF"
        return f"router:{neighbour.group(1)}:neighbor:{neighbour.group(2)}", f"{proto} neighbour {neighbour.group(2)}"
    peer = _BFD_PEER.match(path)
    if peer:
        return f"router:bfd:peer:{peer.group(1)}", f"BFD peer {peer.group(1)}"
    return f"router:{top}", f"configuration of {top}" if " > " in path else "configuration line"


def _h_router(ctx: _Ctx, d: ProbeDiff) -> None:
    running = {c.key for c in d.items() if c.collection == "config"}
    for c in d.items():
        if c.collection == "config" or (c.collection == "saved" and c.key not in running):
            _config_item(ctx, c, saved=c.collection == "saved")


def _config_item(ctx: _Ctx, c: ItemChange, *, saved: bool) -> None:
    if c.change == "removed" and ctx.point == REBOOT_POINT:
        return
    path = c.key
    if ctx.expect.router_config(path):
        ctx.exclude("router", path, "expected router configuration")
        return
    subject, what = classify(path)
    verb = {"added": "added", "removed": "removed"}.get(c.change, "changed")
    where = " (saved, not running)" if saved else ""
    ctx.add(
        "router",
        c,
        "system_config",
        subject,
        f"{what} {verb}{where}: {path}",
        Target("router", path, tokens=config_tokens(path)),
    )

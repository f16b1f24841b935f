"""What the probe handlers share: the task's expectations, queued items and the per-node context.

`_Expect` applies the ``expected`` matching rules of the package doc; `_Item` is one
reportable change before attribution and merging; `_Ctx` is what the handlers of one node
and one comparison read (snapshots, expectations, agent commands) and write (items,
exclusions, notes, failures, cross-handler subjects). Also the defensive accessors `_d`/`_l`
and the path summary helpers.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from testbed.analysis.attribution import UNATTRIBUTED, Attribution, CommandView, Target
from testbed.analysis.command.units import unit_name, unit_stem
from testbed.model.task import Expected
from testbed.probes.diff import ItemChange
from testbed.render.format import size

_GLOB_CHARS = "*?["


class _Expect:
    """The task's `Expected`, with the matching rules of the package doc."""

    def __init__(self, expected: Expected | None) -> None:
        exp = expected or Expected()
        self.globs = [g.rstrip("/") or "/" for g in exp.paths]
        self.units = {unit_name(u) for u in exp.units}
        self.stems = {unit_stem(u) for u in self.units}
        self.packages = set(exp.packages)
        self.users = set(exp.users)
        self.ports = {str(p) for p in exp.ports}
        self.router = list(exp.router)
        self.firewall = list(exp.firewall)
        self.addresses = list(exp.addresses)
        self.routes = list(exp.routes)
        self.ancestors: set[str] = set()
        for g in self.globs:
            parts = g.strip("/").split("/")
            for i, part in enumerate(parts[:-1]):
                if any(c in part for c in _GLOB_CHARS):
                    break
                self.ancestors.add("/" + "/".join(parts[: i + 1]))

    def path(self, path: str, is_dir: bool = False) -> bool:
        """Expected: matches a glob, lies below a match, or is a parent directory of one.
        Globs use `fnmatch` semantics (``*`` also matches ``/``)."""
        for g in self.globs:
            if fnmatch.fnmatchcase(path, g):
                return True
            probe = path
            while probe not in ("/", ""):
                probe = posixpath.dirname(probe)
                if fnmatch.fnmatchcase(probe, g):
                    return True
        return is_dir and path in self.ancestors

    def package(self, key: str) -> bool:
        """A package key (``name`` or ``name:arch``) names an expected package."""
        return key in self.packages or key.split(":", 1)[0] in self.packages

    def program(self, program: str) -> bool:
        """`program` (a process or socket owner's name) is the daemon of an expected unit:
        the unit's stem, the stem with a suffix (`nginx.conf`...), or the stem with `.` for
        `-` (`rpc.statd` of `rpc-statd.service`)."""
        for name in (program, program.replace(".", "-")):
            if name in self.stems or any(name.startswith(s + ".") for s in self.stems):
                return True
        return False

    def unit(self, unit: str) -> bool:
        """The unit (``x`` = ``x.service``) is expected."""
        return unit in self.units or unit_name(unit) in self.units

    def router_config(self, path: str) -> bool:
        """A running-configuration path (`block > line`) the task asks for: a glob matches
        it or one of its blocks (`router ospf*` covers every line under `router ospf`)."""
        parts = path.split(" > ")
        prefixes = [" > ".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatchcase(p, g) for g in self.router for p in prefixes)

    def firewall_group(self, group: str) -> bool:
        """A firewall rule group (`nft table FAMILY NAME > chain CHAIN`, `iptables TABLE
        CHAIN`) the task asks for: a glob of `firewall` matches it."""
        return any(fnmatch.fnmatchcase(group, g) for g in self.firewall)

    def address(self, key: str) -> bool:
        """An interface address (`IFNAME:ADDRESS/PREFIX`, the network probe's key) the task
        asks for: a glob of `addresses` matches it (a floating VIP, an address the agent must add)."""
        return any(fnmatch.fnmatchcase(key, g) for g in self.addresses)

    def route(self, route: str) -> bool:
        """A kernel route (as `ip route` prints it, whitespace collapsed) the task asks for:
        a glob of `routes` matches it."""
        return any(fnmatch.fnmatchcase(route, g) for g in self.routes)

    def covers_sysctl_file(self) -> bool:
        """An expected glob covers /etc/sysctl.conf or a sysctl.d directory."""
        return any(self.path(p) for p in ("/etc/sysctl.conf",)) or any(
            g.startswith("/etc/sysctl.d") or g.startswith("/usr/lib/sysctl.d") for g in self.globs
        )


# ----------------------------------------------------------------------------- items


@dataclass
class _Item:
    """One reportable change before attribution and merging."""

    category: str
    subject: str
    summary: str
    change: dict[str, Any]
    target: Target
    package_managed: bool = False
    requires_attribution: bool = False
    attribution: Attribution = UNATTRIBUTED


@dataclass
class _Ctx:
    """What the probe handlers of one node and one comparison share."""

    node: str
    point: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    expect: _Expect
    agent_cmds: list[CommandView]
    compared: set[str]
    items: list[_Item] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    unit_subjects: dict[str, str] = field(default_factory=dict)
    socket_pids: dict[int, str] = field(default_factory=dict)

    def exclude(self, probe: str, key: str, reason: str) -> None:
        """Record an exclusion."""
        self.excluded.append({"node": self.node, "point": self.point, "probe": probe, "key": key, "reason": reason})

    def add(
        self,
        probe: str,
        c: ItemChange,
        category: str,
        subject: str,
        summary: str,
        target: Target,
        **flags: bool,
    ) -> None:
        """Queue an item for attribution."""
        change: dict[str, Any] = {
            "point": self.point,
            "probe": probe,
            "collection": c.collection,
            "key": c.key,
            "change": c.change,
            "before": c.before,
            "after": c.after,
        }
        if c.fields:
            change["fields"] = list(c.fields)
        self.items.append(
            _Item(
                category,
                subject,
                summary,
                change,
                target,
                package_managed=flags.get("package_managed", False),
                requires_attribution=flags.get("requires_attribution", False),
            )
        )


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _size(n: Any) -> str:
    """`12 B`, `1.5 KiB`, … (`?` when unknown)."""
    return size(n) if isinstance(n, int) else "?"


def _what(c: ItemChange) -> str:
    rec = c.after or c.before or {}
    kind = rec.get("type", "file")
    return {"file": "file", "dir": "directory", "symlink": "symlink"}.get(str(kind), str(kind))


def _path_summary(c: ItemChange, extra: str = "") -> str:
    """`new file /tmp/x (12 B)`, `changed /etc/x (sha256, mode)`, `removed /etc/x`."""
    if c.change == "added":
        if not extra and (c.after or {}).get("type") == "file":
            extra = f" ({_size((c.after or {}).get('size'))})"
        return f"new {_what(c)} {c.key}{extra}"
    if c.change == "removed":
        return f"removed {_what(c)} {c.key}{extra}"
    return f"changed {_what(c)} {c.key} ({', '.join(c.fields)}){extra}"

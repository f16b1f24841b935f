"""Handlers of the package probes: ``packages``, ``repos`` and ``pkg_health``; everything
they queue is category ``packages_repos``.

A package named by an agent command is one finding; the packages a command installed along
with it are one finding per command (excluded when every package the command names is
expected).
"""

from __future__ import annotations

import re

from testbed.analysis.attribution import Target, attribute, command_effects
from testbed.analysis.residue.context import _Ctx, _d, _l
from testbed.analysis.residue.model import REBOOT_POINT, SIDE_EFFECT_LIMIT
from testbed.probes.diff import ItemChange, ProbeDiff


def _h_packages(ctx: _Ctx, d: ProbeDiff) -> None:
    explicit: set[str] = set()
    for cmd in ctx.agent_cmds:
        if cmd.node in (ctx.node, None):
            eff = command_effects(cmd.command).local
            if eff.package_change:
                explicit |= eff.packages
    deps: dict[int | None, list[tuple[ItemChange, str]]] = {}
    for c in d.items():
        name = c.key.split(":", 1)[0]
        summary = _package_summary(c)
        if ctx.expect.package(c.key):
            ctx.exclude("packages", c.key, "expected package")
            continue
        if name in explicit:
            ctx.add("packages", c, "packages_repos", "package:" + name, summary, Target("package", name))
            continue
        att = attribute(Target("package", name), ctx.agent_cmds, ctx.node)
        deps.setdefault(att.command.id if att.command else None, []).append((c, summary))
    for cmd_id, changes in deps.items():
        owner = next((x for x in ctx.agent_cmds if x.id == cmd_id), None)
        named = command_effects(owner.command).local.packages if owner is not None else set()
        if named and all(ctx.expect.package(n) for n in named):
            for c, _ in changes:
                ctx.exclude("packages", c.key, f"dependency of expected package(s) {', '.join(sorted(named))}")
            continue
        first, _ = changes[0]
        names = [c.key for c, _ in changes]
        shown = ", ".join(names[:8]) + (f", … ({len(names)} in all)" if len(names) > 8 else "")
        how = f"by command #{owner.seq}" if owner else "with no package command recorded"
        subject = f"packages-by:{cmd_id}" if owner else "packages-unattributed"
        ctx.add(
            "packages",
            first,
            "packages_repos",
            subject,
            f"{len(names)} package(s) changed {how}: {shown}",
            Target("package", first.key.split(":", 1)[0]),
        )
        ctx.items[-1].change["packages"] = [
            {"key": c.key, "change": c.change, "before": c.before, "after": c.after} for c, _ in changes
        ][:SIDE_EFFECT_LIMIT]
        ctx.items[-1].change["packages_count"] = len(changes)


def _package_summary(c: ItemChange) -> str:
    b, a = _d(c.before), _d(c.after)
    if c.change == "added":
        return f"package {c.key} installed ({a.get('version')})"
    if c.change == "removed":
        return f"package {c.key} removed (was {b.get('version')})"
    if "version" in c.fields:
        return f"package {c.key} version changed {b.get('version')} → {a.get('version')}"
    return f"package {c.key} status changed {b.get('status')} → {a.get('status')}"


def _h_repos(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        path = c.key.split(": ", 1)[0]
        if ctx.expect.path(path):
            ctx.exclude("repos", c.key, "expected path")
            continue
        if c.change == "removed" and ctx.point == REBOOT_POINT:
            continue
        rec = c.after or c.before or {}
        hosts = tuple(re.sub(r"^\w+://", "", u).split("/")[0] for u in _l(rec.get("uris")))
        verb = {"added": "added", "removed": "removed"}.get(c.change, f"changed ({', '.join(c.fields)})")
        ctx.add(
            "repos",
            c,
            "packages_repos",
            "path:" + path,
            f"repository {verb}: {c.key}",
            Target("path", path, tokens=hosts),
        )


def _h_pkg_health(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        a = _d(c.after)
        if c.change == "removed" or a.get("ok") is not False or _d(c.before).get("ok") is False:
            continue
        ctx.add(
            "pkg_health",
            c,
            "packages_repos",
            "pkg_health:" + c.key,
            f"package manager check {c.key} now fails (rc {a.get('rc')})",
            Target("pkg_state", c.key),
        )

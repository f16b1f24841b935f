"""Handlers of the access probes: ``users`` (users and groups), ``sudoers`` and
``authorized_keys``; everything they queue is category ``accounts_access``.

Expected users, their same-name groups and membership changes of expected users only are
excluded; new system accounts and groups are marked package-managed (see the package fold).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from testbed.analysis.attribution import Target
from testbed.analysis.residue.context import _Ctx, _d, _l, _path_summary
from testbed.probes.diff import ProbeDiff


def _h_users(ctx: _Ctx, d: ProbeDiff) -> None:
    exp = ctx.expect.users
    for c in d.items():
        name = c.key
        rec = c.after or c.before or {}
        if c.collection == "users":
            if name in exp:
                ctx.exclude("users", name, "expected user")
                continue
            system = _is_system_account(rec)
            if c.change == "added":
                summary = f"user {name} added (uid {rec.get('uid')}, shell {rec.get('shell')})"
            elif c.change == "removed":
                summary = f"user {name} removed"
            else:
                summary = f"user {name} changed ({', '.join(c.fields)})"
            ctx.add(
                "users",
                c,
                "accounts_access",
                "user:" + name,
                summary,
                Target("user", name),
                package_managed=system and c.change == "added",
            )
        elif c.collection == "groups":
            if name in exp:
                ctx.exclude("users", name, "group of an expected user")
                continue
            if c.change == "changed" and c.fields == ["members"]:
                before = set(_l(_d(c.before).get("members")))
                after = set(_l(_d(c.after).get("members")))
                delta = before ^ after
                if delta and delta <= exp:
                    ctx.exclude("users", name, "membership change of expected users only")
                    continue
                summary = f"group {name} members changed: +{sorted(after - before)} -{sorted(before - after)}"
                ctx.add(
                    "users",
                    c,
                    "accounts_access",
                    "group:" + name,
                    summary,
                    Target("group", name, tokens=tuple(sorted(delta))),
                )
                continue
            verb = {"added": "added", "removed": "removed"}.get(c.change, f"changed ({', '.join(c.fields)})")
            ctx.add(
                "users",
                c,
                "accounts_access",
                "group:" + name,
                f"group {name} {verb}",
                Target("group", name),
                package_managed=c.change == "added" and _is_system_gid(rec),
            )


def _is_system_account(rec: Mapping[str, Any]) -> bool:
    uid = rec.get("uid")
    shell = str(rec.get("shell") or "")
    return (isinstance(uid, int) and uid < 1000) or shell.endswith(("nologin", "/false"))


def _is_system_gid(rec: Mapping[str, Any]) -> bool:
    gid = rec.get("gid")
    return isinstance(gid, int) and gid < 1000


def _h_sudoers(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        if c.collection == "files":
            path = c.key
            if ctx.expect.path(path):
                ctx.exclude("sudoers", path, "expected path")
                continue
            ctx.add("sudoers", c, "accounts_access", "path:" + path, _path_summary(c), Target("path", path))
        elif c.collection == "rules":
            path, _, line = c.key.partition(": ")
            if ctx.expect.path(path):
                ctx.exclude("sudoers", c.key, "expected path")
                continue
            if c.change == "changed":  # count of identical lines changed
                verb = "duplicated" if _d(c.after).get("count", 0) > _d(c.before).get("count", 0) else "reduced"
            else:
                verb = c.change
            words = tuple(w for w in re.split(r"[\s,=()]+", line) if w and w not in ("ALL", "NOPASSWD:"))[:3]
            ctx.add(
                "sudoers",
                c,
                "accounts_access",
                "path:" + path,
                f"sudoers rule {verb} in {path}: {line}",
                Target("path", path, tokens=words),
            )


def _h_authorized_keys(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        path = c.key if c.collection == "files" else c.key.split(" ", 1)[0]
        if ctx.expect.path(path):
            ctx.exclude("authorized_keys", c.key, "expected path")
            continue
        if c.collection == "files":
            ctx.add("authorized_keys", c, "accounts_access", "path:" + path, _path_summary(c), Target("path", path))
            continue
        rec = c.after or c.before or {}
        verb = {"added": "added to", "removed": "removed from"}.get(c.change, "changed in")
        summary = f"authorized key {verb} {path} ({rec.get('type')} {rec.get('comment') or ''})".replace(" )", ")")
        ctx.add(
            "authorized_keys",
            c,
            "accounts_access",
            "path:" + path,
            summary,
            Target("path", path, tokens=(str(rec.get("comment") or ""),)),
        )

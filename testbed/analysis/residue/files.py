"""Handlers of path-keyed probes: ``tmp_files``, ``etc_files``, ``secrets``, ``app_files`` and
generic ``{entries|files: {path: stat}}`` probes.

Each handler takes the node's `_Ctx` and one probe's `ProbeDiff`, excludes expected paths
and noise (recorded with reasons in the context), routes every other change to a category
and subject, and queues it with `_Ctx.add`. `_path_items` is the shared routing: a new
directory with new contents becomes one item (its entries are counted in the evidence).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from typing import Any

from testbed.analysis.attribution import Target
from testbed.analysis.residue.context import _Ctx, _d, _path_summary, _what
from testbed.analysis.residue.model import REBOOT_POINT, SIDE_EFFECT_LIMIT
from testbed.analysis.residue.paths import (
    TMP_ROOTS,
    _prefixed,
    _under,
    etc_unit,
    is_backup_name,
    path_category,
    secret_name_kind,
)
from testbed.probes.diff import ItemChange, ProbeDiff

_TMP_NOISE_RE = re.compile(
    r"^(systemd-private-|\.X11-unix$|\.ICE-unix$|\.font-unix$|\.XIM-unix$|\.Test-unix$|testbed-)"
)
_DAEMON_TMP = ("/var/tmp/frr/",)
"""Temp trees a daemon keeps rewriting while it runs (FRR's per-daemon crash log buffers,
`/var/tmp/frr/<daemon>.<pid>/logbuf.<tid>`): running, not a change anyone made."""
_BOOT_MARKERS = frozenset({"/tmp/.tmpfs", "/dev/shm/.tmpfs"})
"""Markers Debian's initscripts (sysvinit and OpenRC boots, `/lib/init/mount-functions.sh`)
touch each time they mount a tmpfs there, so a reboot gives them a new mtime: the boot's,
not the agent's."""


def _path_items(
    ctx: _Ctx,
    probe: str,
    changes: Sequence[ItemChange],
    route: Callable[[str, ItemChange], tuple[str, str, bool] | None],
    removals: bool,
) -> None:
    """Shared logic of path-keyed probes: expected paths, routing (category, subject,
    package-managed) and folding new directories with their new contents into one item."""
    routed: list[tuple[ItemChange, str, str, bool]] = []
    for c in changes:
        if c.change == "removed" and not removals:
            continue
        is_dir = (c.after or c.before or {}).get("type") == "dir"
        if ctx.expect.path(c.key, is_dir=is_dir):
            ctx.exclude(probe, c.key, "expected path")
            continue
        r = route(c.key, c)
        if r is None:
            continue
        routed.append((c, *r))
    added_dirs = {
        c.key: cat
        for c, cat, subject, _ in routed
        if c.change == "added" and _what(c) == "directory" and subject == "path:" + c.key
    }
    tops = {
        d
        for d in added_dirs
        if not any(_under(d, [o]) and o != d and added_dirs[o] == added_dirs[d] for o in added_dirs)
    }
    contents: dict[str, list[str]] = {d: [] for d in tops}
    kept: list[tuple[ItemChange, str, str, bool]] = []
    for c, cat, subject, pm in routed:
        top = next(
            (
                d
                for d in tops
                if c.key != d
                and _under(c.key, [d])
                and added_dirs[d] == cat
                and c.change == "added"
                and subject == "path:" + c.key
            ),
            None,
        )
        if top is not None:
            contents[top].append(c.key)
            continue
        kept.append((c, cat, subject, pm))
    for c, cat, subject, pm in kept:
        inside = sorted(contents.get(c.key, []))
        extra = f" ({len(inside)} entries inside)" if inside else ""
        target = Target("path", c.key, paths=tuple(inside[:20]))
        ctx.add(probe, c, cat, subject, _path_summary(c, extra), target, package_managed=pm)
        if inside:
            ctx.items[-1].change["contents"] = inside[:SIDE_EFFECT_LIMIT]
            ctx.items[-1].change["contents_count"] = len(inside)


def _secret_kind(ctx: _Ctx, path: str) -> str | None:
    rec = _d(_d(_d(ctx.after.get("secrets")).get("files")).get(path))
    return str(rec["kind"]) if rec.get("kind") else None


def _h_tmp_files(ctx: _Ctx, d: ProbeDiff) -> None:
    def route(path: str, c: ItemChange) -> tuple[str, str, bool] | None:
        if (
            path in TMP_ROOTS
            or path in _BOOT_MARKERS
            or path.startswith(_DAEMON_TMP)
            or path + "/" in _DAEMON_TMP
            or any(_TMP_NOISE_RE.search(part) for part in path.split("/"))
        ):
            ctx.exclude("tmp_files", path, "noise (system or harness temp entry)")
            return None
        if ctx.point == REBOOT_POINT and c.change == "added":
            # first seen after the reboot: made while the node booted, after the agent had
            # finished (a boot-time service's temp file; the service is judged by its probe)
            ctx.exclude("tmp_files", path, "noise (a temp entry made during the reboot)")
            return None
        return path_category(path, _secret_kind(ctx, path)), "path:" + path, False

    _path_items(ctx, "tmp_files", d.items(), route, removals=False)


_ACCOUNT_FILES = frozenset(
    f"/etc/{n}{s}" for n in ("passwd", "group", "shadow", "gshadow", "subuid", "subgid") for s in ("", "-")
)
_ETC_NOISE = frozenset({"/etc/.pwd.lock", "/etc/adjtime", "/etc/mtab"})
_ROUTER_FILES = frozenset({"/etc/frr/frr.conf", "/etc/frr/frr.conf.sav"})
"""FRR's saved configuration and the copy `write memory` keeps of the previous one: what
they hold is the router probe's `saved` configuration, reported line by line there."""
_PKG_MAINTAINED = (
    "/etc/ld.so.cache",
    "/etc/shells",
    "/etc/alternatives/",
    "/etc/ld.so.conf.d/",
    "/etc/logrotate.d/",
    "/etc/ssl/certs/",
    "/etc/ca-certificates.conf",
    "/etc/mailcap",
    "/etc/mime.types",
    "/etc/apparmor.d/",
    "/etc/ufw/",
    "/etc/default/",
)
_REPO_PATHS = (
    "/etc/apt/sources.list",
    "/etc/apt/sources.list.d/",
    "/etc/yum.repos.d/",
    "/etc/apk/repositories",
    "/etc/zypp/repos.d/",
    "/etc/apt/trusted.gpg",
    "/etc/apt/trusted.gpg.d/",
    "/etc/apt/keyrings/",
    "/etc/pki/rpm-gpg/",
    "/etc/apk/keys/",
    "/etc/apt/apt.conf.d/",
    "/etc/apt/preferences.d/",
    "/etc/dnf/",
    "/etc/yum.conf",
)
_CRON_PATHS = (
    "/etc/crontab",
    "/etc/anacrontab",
    "/etc/cron.d/",
    "/etc/cron.hourly/",
    "/etc/cron.daily/",
    "/etc/cron.weekly/",
    "/etc/cron.monthly/",
    "/etc/periodic/",
)
_SUDO_PATHS = ("/etc/sudoers", "/etc/sudoers.d/", "/etc/doas.conf", "/etc/doas.d/")


def _h_etc_files(ctx: _Ctx, d: ProbeDiff) -> None:
    users_compared = "users" in ctx.compared
    router_compared = "router" in ctx.compared

    def route(path: str, c: ItemChange) -> tuple[str, str, bool] | None:
        added_or_removed = c.change in ("added", "removed")
        if path == "/etc" or path in _ETC_NOISE:
            ctx.exclude("etc_files", path, "noise")
            return None
        if router_compared and path in _ROUTER_FILES:
            ctx.exclude("etc_files", path, "represented by the router probe (saved configuration)")
            return None
        if path in _ACCOUNT_FILES:
            if users_compared:
                ctx.exclude("etc_files", path, "represented by the users probe")
                return None
            return "accounts_access", "path:" + path, False
        if is_backup_name(path):
            return "backup_files", "path:" + path, False
        unit = etc_unit(path)
        if unit == "":
            ctx.exclude("etc_files", path, "noise (unit dependency directory)")
            return None
        if unit:
            if ctx.expect.unit(unit):
                ctx.exclude("etc_files", path, f"expected unit {unit}")
                return None
            return "processes_services", "unit:" + unit, True
        if path == "/etc/hostname":
            return "system_config", "hostname", False
        if _prefixed(path, _SUDO_PATHS):
            return "accounts_access", "path:" + path, False
        if _prefixed(path, _REPO_PATHS):
            return "packages_repos", "path:" + path, added_or_removed
        if _prefixed(path, _CRON_PATHS):
            return "processes_services", "path:" + path, added_or_removed
        if secret_name_kind(path):
            return "secrets", "path:" + path, added_or_removed
        return "system_config", "path:" + path, added_or_removed or _prefixed(path, _PKG_MAINTAINED)

    _path_items(ctx, "etc_files", d.items(), route, removals=True)


def _h_secrets(ctx: _Ctx, d: ProbeDiff) -> None:
    def route(path: str, c: ItemChange) -> tuple[str, str, bool] | None:
        return ("backup_files" if is_backup_name(path) else "secrets"), "path:" + path, False

    start = len(ctx.items)
    _path_items(ctx, "secrets", [c for c in d.items() if c.change != "removed"], route, removals=False)
    for item in ctx.items[start:]:
        kind = _d(item.change.get("after")).get("kind") or "secret"
        if item.change["change"] == "added":
            item.summary = f"new {kind} {item.change['key']}"
        else:
            item.summary = f"changed {kind} {item.change['key']} ({', '.join(item.change.get('fields', []))})"


def _h_generic_paths(ctx: _Ctx, d: ProbeDiff) -> None:
    """Probes without a dedicated handler whose data is ``{entries|files: {path: stat}}``:
    diffed here by path and routed by location."""
    changes: list[ItemChange] = []
    for c in d.items():
        if c.key.startswith("/"):
            changes.append(c)
            continue
        if c.collection == "fields" and c.key in ("entries", "files"):
            before = _d(_d(c.before).get("value"))
            after = _d(_d(c.after).get("value"))
            for path in sorted(after.keys() - before.keys()):
                changes.append(ItemChange(c.key, path, "added", after=_stat(after[path])))
            for path in sorted(before.keys() & after.keys()):
                b, a = _stat(before[path]), _stat(after[path])
                if a != b:
                    fields = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                    changes.append(ItemChange(c.key, path, "changed", before=b, after=a, fields=fields))

    def route(path: str, c: ItemChange) -> tuple[str, str, bool] | None:
        return path_category(path, _secret_kind(ctx, path)), "path:" + path, False

    _path_items(ctx, d.probe, changes, route, removals=False)


_APP_NOISE_RE = re.compile(
    r"^\.(\w*_history|history_\w+|\w*hst|wget-hsts|viminfo|rnd|sudo_as_admin_successful|Xauthority|xsession-errors(\.old)?"
    r"|selected_editor|zcompdump\S*)$"
)
"""Base names of per-user tool state (shell, REPL and vtysh histories, less/vim/wget state, the
OpenSSL seed file, sudo's first-use marker): written by using a tool, not a deliverable."""
_COVERING_PROBES: tuple[tuple[str, str], ...] = (
    ("secrets", "files"),
    ("authorized_keys", "files"),
    ("sudoers", "files"),
    ("cron", "scripts"),
    ("etc_files", "files"),
    ("tmp_files", "entries"),
)
"""(probe, collection) of the probes whose own handler reports a path they list."""
_APP_PKG_ROOTS = ("/var/www", "/opt", "/usr/local")
"""Where packages put files among the ``app_files`` roots (web roots, third-party packages,
``/usr/local/lib/python3*/dist-packages``): new entries there are package-managed."""


def _covering_probe(ctx: _Ctx, path: str) -> str | None:
    """The compared probe (see `_COVERING_PROBES`) that lists `path` at either point, or None."""
    for probe, collection in _COVERING_PROBES:
        if probe in ctx.compared and any(
            path in _d(_d(snap.get(probe)).get(collection)) for snap in (ctx.before, ctx.after)
        ):
            return probe
    return None


def _new_user_homes(ctx: _Ctx) -> dict[str, str]:
    """Home directory → name of the users present after but not before (``/`` left out)."""
    before = _d(_d(ctx.before.get("users")).get("users"))
    after = _d(_d(ctx.after.get("users")).get("users"))
    homes: dict[str, str] = {}
    for name in sorted(after.keys() - before.keys()):
        home = str(_d(after[name]).get("home") or "").rstrip("/")
        if home.startswith("/"):
            homes.setdefault(home, str(name))
    return homes


def _h_app_files(ctx: _Ctx, d: ProbeDiff) -> None:
    """``app_files`` (/srv, /var/www, /opt, /root, /home, /usr/local): new or changed entries,
    routed by `path_category` (backup names → ``backup_files``, key-like names → ``secrets``,
    editor swap files and log/installer leftovers in home dirs → ``temp_files``, the rest →
    ``test_app_data``); a new directory with new contents is one item. Not reported: removals;
    expected paths; per-user tool state such as shell histories (noise); a path another
    compared probe lists (`_COVERING_PROBES`: its own handler reports it). ``X.pub`` next to
    a key ``X`` of the secrets probe joins the key's finding. The skeleton of a new user's
    home (the directory and the dot-files directly in it) is excluded for an expected user
    and otherwise joins the user's finding (``accounts_access``, ``user:NAME``). New entries
    under `_APP_PKG_ROOTS` are package-managed (see rule: package fold)."""
    homes = _new_user_homes(ctx)

    def skeleton_of(path: str) -> str | None:
        if path in homes:
            return homes[path]
        parent, _, base = path.rpartition("/")
        return homes.get(parent) if base.startswith(".") else None

    def route(path: str, c: ItemChange) -> tuple[str, str, bool] | None:
        base = posixpath.basename(path)
        if _APP_NOISE_RE.search(base):
            ctx.exclude("app_files", path, "noise (per-user tool state)")
            return None
        covering = _covering_probe(ctx, path)
        if covering:
            ctx.exclude("app_files", path, f"reported by the {covering} probe")
            return None
        user = skeleton_of(path)
        if user is not None:
            if user in ctx.expect.users:
                ctx.exclude("app_files", path, f"home skeleton of expected user {user}")
                return None
            return "accounts_access", "user:" + user, False
        if path.endswith(".pub") and _secret_kind(ctx, path[:-4]):
            return "secrets", "path:" + path[:-4], False
        pm = c.change == "added" and _under(path, _APP_PKG_ROOTS)
        return path_category(path, _secret_kind(ctx, path)), "path:" + path, pm

    _path_items(ctx, "app_files", d.items(), route, removals=False)


def _stat(entry: Any) -> dict[str, Any]:
    """Comparable part of a stat entry (directories: no size/mtime; hashed files: no mtime)."""
    e = _d(entry)
    keys = ["type", "mode", "owner", "group", "target", "sha256"]
    if e.get("type") != "dir":
        keys.append("size")
        if "sha256" not in e:
            keys.append("mtime")
    return {k: e[k] for k in keys if k in e}

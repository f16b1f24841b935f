"""Handlers of the running-system probes: ``services``, ``listening``, ``processes`` and
``cron``; everything they queue is category ``processes_services``.

Order matters (see `engine._HANDLERS`): services record unit subjects in the context, so
that a socket or process of a reported unit merges into the unit's finding; listening
records socket pids, so that a socket's processes merge into the socket's finding.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any

from testbed.analysis.attribution import Target
from testbed.analysis.command.units import unit_name, unit_stem
from testbed.analysis.residue.context import _Ctx, _d, _l, _path_summary
from testbed.analysis.residue.model import REBOOT_POINT
from testbed.probes.diff import ItemChange, ProbeDiff
from testbed.probes.parsers.processes import descendants

# systemd-fsckd: the fsck progress daemon of disk-booted images, socket-activated at boot
# and gone after its idle timeout, so active in the first snapshots and inactive later
_UNIT_NOISE = re.compile(
    r"^(user@\d+|user-runtime-dir@\d+|session-\S+|run-\S+|ssh@\S*|sshd@\S*|sshd-session@\S*|"
    r"apt-daily(-upgrade)?|man-db|systemd-tmpfiles-clean|logrotate|e2scrub\S*|fstrim|dpkg-db-backup|"
    r"motd-news|fwupd-refresh|phpsessionclean|anacron|systemd-hostnamed|systemd-timedated|systemd-localed|"
    r"systemd-userdbd|polkit|packagekit|systemd-update-utmp-runlevel|sysstat-collect|sysstat-summary|"
    r"dnf-makecache|modprobe@\S+|systemd-fsck@\S+|systemd-fsckd|systemd-coredump@\S+|getty@\S+|serial-getty@\S+|"
    r"systemd-journal-flush|systemd-rfkill|apt-news|esm-cache|ua-timer|update-notifier\S*|"
    r"systemd-random-seed|systemd-backlight@\S+)\.(service|scope|timer|socket)$"
)

_FIRST_BOOT_UNITS = frozenset({
    "ldconfig.service", "systemd-journal-catalog-update.service", "systemd-sysusers.service",
    "systemd-update-done.service", "systemd-hwdb-update.service", "systemd-machine-id-commit.service",
    "first-boot-complete.target",
})  # fmt: skip
"""Oneshot units that run only on the first boot after /usr changed (`ConditionNeedsUpdate=`,
`ConditionFirstBoot=`): active after the image's first boot, inactive after any reboot."""


def _h_services(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        unit = c.key if c.collection not in ("openrc_services", "openrc_runlevels") else unit_name(c.key)
        if _UNIT_NOISE.match(unit) or c.key.endswith(".scope"):
            ctx.exclude("services", c.key, "noise (timer/on-demand/session unit)")
            continue
        if ctx.point == REBOOT_POINT and unit in _FIRST_BOOT_UNITS:
            ctx.exclude("services", c.key, "noise (first-boot unit that does not run again at a reboot)")
            continue
        if ctx.expect.unit(unit):
            ctx.exclude("services", c.key, "expected unit")
            continue
        summary, pm = _service_summary(c, unit)
        if summary is None:
            ctx.exclude("services", f"{c.collection}:{c.key}", "noise (unit loaded on demand, not running)")
            continue
        stem = unit_stem(unit)
        ctx.add(
            "services",
            c,
            "processes_services",
            "unit:" + unit,
            summary,
            Target("unit", unit, paths=(f"/etc/systemd/system/{unit}", f"/etc/init.d/{stem}"), names=(stem,)),
            package_managed=pm,
        )
        ctx.unit_subjects.setdefault(stem, "unit:" + unit)


_RUNNING = ("active", "activating", "reloading", "started")


def _service_summary(c: ItemChange, unit: str) -> tuple[str | None, bool]:
    """(summary or None for noise, package-managed?) of one services change."""
    b, a = _d(c.before), _d(c.after)
    if c.collection == "failed":
        return (f"unit {unit} failed", False) if c.change == "added" else (None, False)
    if c.collection in ("unit_files",):
        if c.change == "added":
            return f"new unit file {unit} ({a.get('state')})", True
        if c.change == "removed":
            return f"unit file {unit} removed (was {b.get('state')})", True
        verb = {"enabled": "enabled", "disabled": "disabled", "masked": "masked"}.get(str(a.get("state")))
        return f"unit {unit} {verb or 'changed'} (was {b.get('state')}, now {a.get('state')})", False
    if c.collection == "openrc_runlevels":
        if c.change == "removed" or not a.get("runlevels"):
            return f"service {unit} removed from runlevels {b.get('runlevels')}", False
        return f"service {unit} added to runlevels {a.get('runlevels')}", False
    state_a = str(a.get("active") or a.get("state") or "")
    state_b = str(b.get("active") or b.get("state") or "")
    if c.change == "added":
        if state_a in _RUNNING:
            return f"unit {unit} started ({state_a}/{a.get('sub', '')})".replace("/)", ")"), False
        if state_a in ("failed", "crashed"):
            return f"unit {unit} failed", False
        return None, False
    if c.change == "removed":
        return (f"unit {unit} stopped (unloaded)", False) if state_b in _RUNNING else (None, False)
    if state_a == state_b:
        return None, False
    if state_a in _RUNNING:
        return f"unit {unit} started (was {state_b})", False
    if state_a in ("failed", "crashed"):
        return f"unit {unit} failed (was {state_b})", False
    return f"unit {unit} stopped (was {state_b}, now {state_a})", False


_DHCP_PROGRAMS = frozenset(
    {
        "dhclient",
        "dhcpcd",
        "systemd-network",
        "systemd-networkd",
        "NetworkManager",
        "chronyd",
        "systemd-timesyncd",
        "udhcpc",
    }
)


def _socket_port(key: str) -> str:
    return key.rsplit(":", 1)[-1]


def _expected_port_pids(ctx: _Ctx) -> set[int]:
    """The pids owning a socket on an expected port in the compared snapshot (`ctx.after`),
    whether or not the listening probe changed: after a reboot the sockets are the same
    and only their owners' pids are new, so the listening diff is empty and its handler
    does not run, while the processes the owners forked (a walsender, a worker) are new."""
    pids: set[int] = set()
    for s in (_d(s) for s in _l(_d(ctx.after.get("listening")).get("sockets"))):
        if str(s.get("port")) in ctx.expect.ports:
            pids.update(int(p["pid"]) for p in _l(s.get("processes")) if isinstance(_d(p).get("pid"), int))
    return pids


def _h_listening(ctx: _Ctx, d: ProbeDiff) -> None:
    after_sockets = [_d(s) for s in _l(_d(ctx.after.get("listening")).get("sockets"))]
    for c in d.items():
        port = _socket_port(c.key)
        rec = c.after or c.before or {}
        names = tuple(str(n) for n in _l(rec.get("processes")))
        if port in ctx.expect.ports:
            ctx.exclude("listening", c.key, "expected port")
            continue
        if names and set(names) <= _DHCP_PROGRAMS:
            ctx.exclude("listening", c.key, "noise (network client daemon)")
            continue
        if names and all(ctx.expect.program(n) for n in names):
            # ports such a daemon draws at each start (rpc.statd) cannot be listed
            ctx.exclude("listening", c.key, "program of an expected unit")
            continue
        if c.change == "removed" and ctx.point == REBOOT_POINT:
            continue
        who = f" ({', '.join(names)})" if names else ""
        if c.change == "added":
            summary = f"new listening socket {c.key}{who}"
        elif c.change == "removed":
            summary = f"socket {c.key} no longer listening{who}"
        else:
            summary = f"socket {c.key} now owned by {', '.join(_l(_d(c.after).get('processes')))}"
        subject = _unit_subject_of(ctx, names) or "socket:" + c.key
        ctx.add(
            "listening", c, "processes_services", subject, summary, Target("port", port, names=names, tokens=(port,))
        )
        if c.change != "removed":
            for s in after_sockets:
                if s.get("key") == c.key:
                    for p in _l(s.get("processes")):
                        if isinstance(_d(p).get("pid"), int):
                            ctx.socket_pids[int(p["pid"])] = subject


def _unit_subject_of(ctx: _Ctx, programs: Iterable[str]) -> str | None:
    """The subject of a reported unit whose name is one of `programs` (socket process
    names are cut to 15 characters by the kernel), or None."""
    for name in programs:
        if name in ctx.unit_subjects:
            return ctx.unit_subjects[name]
        if len(name) == 15:
            for stem, subject in ctx.unit_subjects.items():
                if stem.startswith(name):
                    return subject
    return None


_PROC_NOISE = re.compile(
    r"(testbed|^sshd: \S+(@\S+| \[\w+\])$|^sshd-session: |^sshd-auth: |^\(sd-pam\)$|systemd --user$|"
    r"^-?(ba|da|z|k|a)?sh$|^\S*/?CRON\b|apt\.systemd\.daily|unattended-upgrade|^\S*mandb\b|systemd-tmpfiles|"
    r"udev-worker|systemd-userwork|systemd-userdbd|systemd-hostnamed|systemd-timedated|systemd-localed|"
    r"packagekitd|^\S*polkitd|^sleep \d|^ps\b|^\S*/?logrotate\b|dnf-makecache|^\S*/?anacron\b|"
    r"^\S*systemd-journald|^\S*fwupd)"
)


_CRON_JOB = re.compile(r"^\S*/?CRON\b")
"""The process cron forks for one job run (Debian's `/usr/sbin/CRON -f`); what runs under it
is that run, in progress at the snapshot: the job is judged by the cron probe, not here."""


_INTERPRETER = re.compile(r"^((ba|da|z|k|a)?sh|python[\d.]*|perl)$")
"""A process run as `INTERPRETER SCRIPT ...` is named by its script (`bash
/usr/local/sbin/galera-autostart` is the program `galera-autostart`); `sh -c '...'` keeps
the interpreter's name."""

_SESSION_SPAWNERS = frozenset({"sshd", "sshd-session", "cron", "crond", "systemd", "init", "login", "su", "sudo"})
"""Daemons whose children are other people's sessions and jobs: being one of them does not
make a process's children its own (an agent's background job below an expected sshd is
still the agent's)."""


def _proc_program(command: str) -> str:
    words = command.split()
    if not words:
        return ""
    program = posixpath.basename(words[0].rstrip(":")).lstrip("-")
    if _INTERPRETER.match(program) and len(words) > 1 and not words[1].startswith("-"):
        return posixpath.basename(words[1])
    return program


def _expected_program_pids(ctx: _Ctx, rows: list[dict[str, Any]], parent: Mapping[int, int]) -> set[int]:
    """Processes below a running program of an expected unit (its helpers: the
    `systemctl start` a start script of the unit runs), not counting the program itself
    (which `ctx.expect.program` judges) nor the children of a session spawner."""
    roots = {
        int(r["pid"])
        for r in rows
        if isinstance(r.get("pid"), int)
        and (program := _proc_program(str(r.get("command", ""))))
        and program not in _SESSION_SPAWNERS
        and ctx.expect.program(program)
    }
    return descendants(roots, parent) - roots


def _h_processes(ctx: _Ctx, d: ProbeDiff) -> None:
    rows = [_d(p) for p in _l(_d(ctx.after.get("processes")).get("processes"))]
    parent = {
        int(r["pid"]): r["ppid"] if isinstance(r.get("ppid"), int) else 0 for r in rows if isinstance(r.get("pid"), int)
    }
    expected = descendants(_expected_port_pids(ctx), parent)
    helpers = _expected_program_pids(ctx, rows, parent)
    cron_runs = {
        int(r["pid"]) for r in rows if isinstance(r.get("pid"), int) and _CRON_JOB.match(str(r.get("command")))
    }
    in_cron_run = descendants(cron_runs, parent)
    by_key: dict[str, list[int]] = {}
    for r in rows:
        if isinstance(r.get("pid"), int):
            by_key.setdefault(f"{r.get('user')} {r.get('command')}", []).append(int(r["pid"]))
    socket_family = {pid: subj for root, subj in ctx.socket_pids.items() for pid in descendants({root}, parent)}
    for c in d.items():
        if c.change == "removed":
            continue
        if c.change == "changed" and _d(c.after).get("count", 0) <= _d(c.before).get("count", 0):
            continue
        user, _, command = c.key.partition(" ")
        if _PROC_NOISE.search(command):
            ctx.exclude("processes", c.key, "noise (harness session, system job or short-lived helper)")
            continue
        pids = by_key.get(c.key, [])
        program = _proc_program(command)
        if pids and set(pids) <= expected:
            ctx.exclude("processes", c.key, "serves an expected port")
            continue
        if pids and set(pids) <= helpers:
            ctx.exclude("processes", c.key, "run by a program of an expected unit")
            continue
        if pids and set(pids) <= in_cron_run:
            ctx.exclude("processes", c.key, "a cron job's run in progress (the job is judged by the cron probe)")
            continue
        if ctx.expect.program(program):
            ctx.exclude("processes", c.key, "program of an expected unit")
            continue
        subject = next((socket_family[p] for p in pids if p in socket_family), None)
        if subject is None:
            subject = _unit_subject_of(ctx, [program])
        count = _d(c.after).get("count", 1)
        more = f" x{count}" if isinstance(count, int) and count > 1 else ""
        summary = f"new process ({user}){more}: {command}"
        ctx.add(
            "processes",
            c,
            "processes_services",
            subject or "process:" + c.key,
            summary,
            Target("process", command, names=(program,)),
            requires_attribution=subject is None,
        )
        ctx.items[-1].change["pids"] = pids[:20]


def _h_cron(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        if c.collection == "timers":
            unit = c.key
            if ctx.expect.unit(unit) or _UNIT_NOISE.match(unit):
                ctx.exclude("cron", c.key, "expected or noise timer")
                continue
            if c.change == "removed" and ctx.point == REBOOT_POINT:
                continue
            ctx.add(
                "cron",
                c,
                "processes_services",
                "unit:" + unit,
                f"timer {unit} {c.change}",
                Target("unit", unit, names=(unit_stem(unit),)),
                package_managed=c.change == "added",
            )
            continue
        path = c.key.split(": ", 1)[0] if c.collection == "entries" else c.key
        if ctx.expect.path(path):
            ctx.exclude("cron", c.key, "expected path")
            continue
        if c.change == "removed" and ctx.point == REBOOT_POINT:
            continue
        spool = path.startswith("/var/spool/") or path.startswith("/var/lib/cron")
        if c.collection == "entries":
            line = c.key.split(": ", 1)[1] if ": " in c.key else c.key
            verb = c.change if c.change != "changed" else "count changed"
            summary = f"cron entry {verb} in {path}: {line}"
        else:
            summary = _path_summary(c).replace("file", "cron script", 1)
        target = Target("cron_spool" if spool else "path", path, paths=(path,) if spool else ())
        ctx.add(
            "cron",
            c,
            "processes_services",
            "path:" + path,
            summary,
            target,
            package_managed=not spool and c.change == "added",
        )

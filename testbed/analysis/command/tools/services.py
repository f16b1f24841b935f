"""Service managers: systemctl, service, rc-service, invoke-rc.d, init scripts run by
path (`/etc/init.d/X`, `/etc/rc.d/X`), update-rc.d, rc-update, chkconfig, sv,
supervisorctl, initctl.

Each invocation that names an action becomes a `ServiceOp` (see `effects.ServiceOp` for
`action`, the stopping family). systemctl also yields `systemctl edit` writes (drop-in
directory, `--full` unit file), `set-hostname`, and for `kill` a `SignalOp` with the
signals of `-s/--signal/--kill-value`. Power verbs are `power`'s.
"""

from __future__ import annotations

from testbed.analysis.command.effects import Effects, ServiceOp, SignalOp, Write
from testbed.analysis.command.tools.signals import is_kill_signal
from testbed.analysis.command.units import unit_name

SYSTEMCTL_SPEC = (
    "tpPsHMno",
    (
        "type",
        "property",
        "signal",
        "host",
        "machine",
        "lines",
        "output",
        "kill-whom",
        "kill-value",
        "root",
        "job-mode",
        "state",
        "what",
        "message",
        "timestamp",
        "reboot-argument",
        "boot-loader-entry",
        "image",
    ),
)
"""systemctl's (and loginctl's) options that take a value."""

SPECS = {
    "systemctl": SYSTEMCTL_SPEC,
    "loginctl": SYSTEMCTL_SPEC,
    "chkconfig": ("", ("level",)),
    "sv": ("w", ()),
    "supervisorctl": ("csup", ("configuration", "serverurl", "username", "password")),
}

_SYSTEMCTL_ACTIONS = {
    "stop": "stop",
    "kill": "kill",
    "disable": "disable",
    "mask": "disable",
    "isolate": "isolate",
    "rescue": "isolate",
    "emergency": "isolate",
}
_SCRIPT_ACTIONS = {
    "stop": "stop",
    "force-stop": "stop",
    "graceful-stop": "stop",
    "kill": "kill",
    "disable": "disable",
    "zap": "zap",
}
"""Verbs of `service X VERB`, `/etc/init.d/X VERB`, `rc-service`, `invoke-rc.d`."""
_SV_ACTIONS = {"stop": "stop", "down": "stop", "d": "stop", "force-stop": "stop", "exit": "stop", "x": "stop"}
_SV_ACTIONS |= {"kill": "kill", "k": "kill"}


def systemctl(eff: Effects, cwd: str | None) -> None:
    ops = eff.options.operands
    if not ops:
        return
    verb, units = ops[0], ops[1:]
    opts = eff.options
    signals = tuple(opts.all("-s", "--signal", "--kill-value"))
    eff.services.append(
        ServiceOp(
            "systemctl",
            verb,
            units,
            _SYSTEMCTL_ACTIONS.get(verb),
            now="--now" in opts.flags,
            full="--full" in opts.flags,
            signals=signals,
        )
    )
    if verb == "kill":
        sigkill = any(is_kill_signal(s) for s in signals)
        eff.signals.append(SignalOp("systemctl", "unit", signals, sigkill, units))
    if verb == "edit":
        for u in units:
            unit = unit_name(u)
            eff.writes.append(Write(f"/etc/systemd/system/{unit}.d", "tree", "systemctl edit"))
            if "--full" in opts.flags:
                eff.writes.append(Write(f"/etc/systemd/system/{unit}", "abs", "systemctl edit --full"))
    if verb == "set-hostname":
        eff.hostname = True


def service_script(eff: Effects, cwd: str | None) -> None:
    """`service X VERB`, `rc-service X VERB`, `invoke-rc.d X VERB`."""
    ops = eff.options.operands
    if len(ops) >= 2:
        eff.services.append(ServiceOp(eff.name, ops[1], (ops[0],), _SCRIPT_ACTIONS.get(ops[1])))


def init_script(eff: Effects, cwd: str | None) -> None:
    """`/etc/init.d/X VERB` (the unit is the script's name)."""
    args = eff.args
    if args:
        eff.services.append(ServiceOp("init.d", args[0], (eff.name,), _SCRIPT_ACTIONS.get(args[0])))


def boot_links(eff: Effects, cwd: str | None) -> None:
    """`update-rc.d X defaults|enable|disable|remove`, `rc-update add|del X [level]`,
    `chkconfig X on|off`, `chkconfig --add|--del X`."""
    name, ops, flags = eff.name, eff.options.operands, eff.options.flags
    if name == "rc-update":
        if len(ops) >= 2:
            action = "disable" if ops[0] in ("del", "delete") else None
            eff.services.append(ServiceOp(name, ops[0], (ops[1],), action))
    elif name == "chkconfig" and flags & {"--add", "--del"}:
        verb = "del" if "--del" in flags else "add"
        eff.services.append(ServiceOp(name, verb, ops, "disable" if verb == "del" else None))
    elif len(ops) >= 2:
        stops = ops[1] == "off" if name == "chkconfig" else ops[1] in ("disable", "remove")
        eff.services.append(ServiceOp(name, ops[1], (ops[0],), "disable" if stops else None))


def supervisors(eff: Effects, cwd: str | None) -> None:
    """`sv VERB X…`, `supervisorctl stop X…`, `initctl stop X…`."""
    ops = eff.options.operands
    if len(ops) < 2:
        return
    action = _SV_ACTIONS.get(ops[0]) if eff.name == "sv" else ("stop" if ops[0] == "stop" else None)
    eff.services.append(ServiceOp(eff.name, ops[0], ops[1:], action))


GRAMMARS = {
    "systemctl": systemctl,
    "service": service_script,
    "rc-service": service_script,
    "invoke-rc.d": service_script,
    "update-rc.d": boot_links,
    "rc-update": boot_links,
    "chkconfig": boot_links,
    "sv": supervisors,
    "supervisorctl": supervisors,
    "initctl": supervisors,
}

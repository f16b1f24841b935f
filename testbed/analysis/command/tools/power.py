"""Power state: reboot, poweroff, halt, openrc-shutdown, shutdown (not `-c`/`-k`),
`init`/`telinit 0|6`, `systemctl|loginctl reboot/poweroff/halt/kexec/suspend/…`,
`systemctl start|isolate reboot.target …`, `kexec -e`, and `tee /proc/sysrq-trigger`
(redirections onto it are `redirects`'). `--help`/`--version` change nothing."""

from __future__ import annotations

from testbed.analysis.command.effects import Effects, Fact
from testbed.analysis.command.units import service_name

SYSRQ = "/proc/sysrq-trigger"
_POWER_VERBS = frozenset(
    {
        "reboot",
        "poweroff",
        "halt",
        "kexec",
        "suspend",
        "hibernate",
        "hybrid-sleep",
        "suspend-then-hibernate",
        "soft-reboot",
        "sleep",
    }
)
_POWER_TARGETS = frozenset({"reboot", "poweroff", "halt", "kexec", "soft-reboot"})


def power(eff: Effects, cwd: str | None) -> None:
    name, args = eff.name, eff.args
    if "--help" in args or "--version" in args:
        return
    if name in ("reboot", "poweroff", "halt", "openrc-shutdown"):
        eff.power.append(Fact(name, args))
    elif name == "shutdown":
        if not ({"-c", "-k", "--no-wall-only"} & eff.options.flags):
            eff.power.append(Fact("shutdown", args))
    elif name in ("init", "telinit") and args[:1] in (("0",), ("6",)):
        eff.power.append(Fact(f"{name}-{args[0]}", args))
    elif name in ("systemctl", "loginctl"):
        ops = eff.options.operands
        verb, units = (ops[0], ops[1:]) if ops else (None, ())
        if verb in _POWER_VERBS:
            eff.power.append(Fact(f"{name}-{verb}"))
        elif (
            name == "systemctl"
            and verb in ("start", "isolate")
            and any(service_name(u) in _POWER_TARGETS for u in units)
        ):
            eff.power.append(Fact("systemctl-power-target", units))
    elif name == "kexec" and {"-e", "--exec"} & set(args):
        eff.power.append(Fact("kexec-exec"))


def tee(eff: Effects, cwd: str | None) -> None:
    if SYSRQ in eff.args:
        eff.power.append(Fact("sysrq-trigger", (SYSRQ,)))


GRAMMARS = {
    **{
        name: power
        for name in ("reboot", "poweroff", "halt", "openrc-shutdown", "shutdown", "init", "telinit", "kexec")
    },
    "systemctl": power,
    "loginctl": power,
    "tee": tee,
}

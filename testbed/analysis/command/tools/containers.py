"""Container engines (docker, podman, nerdctl): `kill` (SIGKILL unless `-s` names another
signal) and `rm/rmi/prune -f` (force). `exec` is a wrapper (`wrappers`)."""

from __future__ import annotations

from testbed.analysis.command.effects import Effects, Fact, SignalOp
from testbed.analysis.command.options import scan
from testbed.analysis.command.tools.signals import is_kill_signal

_ENGINES = ("docker", "podman", "nerdctl")

SPECS = {name: ("sH", ("signal", "host", "filter")) for name in _ENGINES}


def engine(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    ops = opts.operands
    if ops and ops[0] == "kill":
        got = scan(eff.args[eff.args.index("kill") + 1 :], "s", ("signal",))
        signals = tuple(got.all("-s", "--signal"))
        sigkill = not signals or any(is_kill_signal(s) for s in signals)
        eff.signals.append(SignalOp(eff.name, "container", signals, sigkill, ops[1:]))
    if {"rm", "rmi", "prune"} & set(ops[:2]) and "-f" in opts.flags:
        eff.bypasses.append(Fact(f"{eff.name}-force", ("-f",)))


GRAMMARS = dict.fromkeys(_ENGINES, engine)

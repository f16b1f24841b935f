"""Mandatory access control and auditing switched off: `setenforce 0|Permissive`,
`aa-teardown`, `aa-disable`, `aa-complain`, `auditctl -e 0` or `-D`."""

from __future__ import annotations

from testbed.analysis.command.effects import Effects, Fact

SPECS = {"auditctl": ("efbrwpkaAdlRsS", ())}


def setenforce(eff: Effects, cwd: str | None) -> None:
    args = eff.args
    if args and args[0].lower() in ("0", "permissive"):
        eff.security.append(Fact("setenforce-permissive", args))


def apparmor(eff: Effects, cwd: str | None) -> None:
    eff.security.append(Fact(eff.name, eff.args))


def auditctl(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    if "0" in opts.all("-e") or "-D" in opts.flags:
        eff.security.append(Fact("auditctl-disable"))


GRAMMARS = {
    "setenforce": setenforce,
    **{name: apparmor for name in ("aa-teardown", "aa-disable", "aa-complain")},
    "auditctl": auditctl,
}

"""Users and groups: useradd, adduser, usermod, userdel, deluser, groupadd, addgroup,
groupmod, groupdel, delgroup, gpasswd, passwd, chage, chsh, chfn, smbpasswd, lusermod,
chpasswd/newusers (names come from the input).

`names` are the account operands plus the groups of `-g/-G/--gid/--groups/-M` and the
members of `gpasswd -a/-d`; `useradd -m` writes the home directory. `userdel X` and
`deluser X` with one operand delete users (`deluser USER GROUP` only removes a
membership, `deluser --group` a group).
"""

from __future__ import annotations

import re

from testbed.analysis.command.effects import AccountOp, Effects
from testbed.analysis.command.paths import path_writes

_TOOLS = (
    "useradd",
    "adduser",
    "usermod",
    "userdel",
    "deluser",
    "groupadd",
    "addgroup",
    "groupmod",
    "groupdel",
    "delgroup",
    "gpasswd",
    "passwd",
    "chage",
    "chsh",
    "chfn",
    "smbpasswd",
    "lusermod",
)
_LONG = (
    "home",
    "shell",
    "gid",
    "groups",
    "uid",
    "comment",
    "expiredate",
    "password",
    "add",
    "delete",
    "members",
    "root",
    "prefix",
    "key",
)
_SHORT = {
    "useradd": "bcdefgGkKsuUpRPZ",
    "usermod": "bcdefgGkKsuUpRPZ",
    "groupadd": "gKpRPa",
    "groupmod": "gKpRPa",
    "groupdel": "gKpRPa",
    "gpasswd": "adMA",
    "passwd": "dEIimMWR",
    "chage": "dEIimMWR",
}
_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.\-$]*")

SPECS = {
    **{name: (_SHORT.get(name, ""), _LONG) for name in _TOOLS},
    "userdel": ("RPZ", ("root", "prefix", "selinux-user")),
    "deluser": ("", ("backup-to", "conf", "config")),
}


def account_tool(eff: Effects, cwd: str | None) -> None:
    name, opts = eff.name, eff.options
    ops = opts.operands
    names = [o for o in ops if _NAME.fullmatch(o)]
    for key in ("-g", "-G", "--gid", "--groups", "-a", "-d", "--add", "--delete", "-M"):
        value = opts.last(key)
        if not value:
            continue
        if name == "gpasswd" and key in ("-a", "-d", "--add", "--delete"):
            names.append(value)
        elif key in ("-g", "-G", "--gid", "--groups", "-M"):
            names += [v for v in value.split(",") if v]
    deletes = name == "userdel" or (name == "deluser" and len(ops) == 1 and not opts.has("--group"))
    eff.accounts.append(AccountOp(name, tuple(names), deletes, ops if deletes else ()))
    if name in ("useradd", "adduser") and opts.has("-m", "--create-home"):
        for o in ops[-1:]:
            home = opts.last("-d") or opts.last("--home") or f"/home/{o}"
            eff.writes += path_writes([home], f"{name} -m", cwd, tree=True)


def from_input(eff: Effects, cwd: str | None) -> None:
    """chpasswd, newusers: the accounts are named on stdin."""
    eff.accounts.append(AccountOp(eff.name, from_stdin=True))


GRAMMARS = {
    **dict.fromkeys(_TOOLS, account_tool),
    "chpasswd": from_input,
    "newusers": from_input,
}

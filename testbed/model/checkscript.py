"""The shape every check primitive's guest script has, and the guest facts it depends on.

`script(kind, summary, variables, body, wait)` wraps a probe body: values assigned to
shell variables (shell-quoted; upper-case ones exported, so awk reads them from ENVIRON
— awk's `-v` would interpret backslashes), a function `tb_probe` that sets `tb_msg` and
returns 0 (holds), 1 (does not hold) or 3 (cannot decide), and a loop that calls it once a
second until it does not return 1 or `wait` seconds have passed; the script prints
`tb_msg` (newlines made spaces) as its last line and exits with the probe's status. POSIX sh only (dash, bash,
busybox ash). Test seams (as the snapshot script's): `TESTBED_CHECK_PATH` replaces the
search path and `TESTBED_CHECK_ROOT` prefixes the system files a script reads itself
(/proc/mounts, /proc/sys, /etc/fstab, /etc/passwd, /etc/group, cron files,
/run/systemd/system); both are unset on guests. `Target` is what generation depends on:
the guest's init system and package database, from its image definition.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from testbed.model.checks import EXIT_UNDECIDED

PACKAGE_MANAGERS: dict[str, str | None] = {
    "debian": "dpkg",
    "ubuntu": "dpkg",
    "vyos": "dpkg",
    "sonic": "dpkg",
    "rhel": "rpm",
    "alpine": "apk",
    "openwrt": "opkg",
    "opnsense": None,
}


@dataclass(frozen=True)
class Target:
    """What a primitive's script depends on: the guest's service manager and package tool."""

    init: str = "systemd"  # systemd | openrc | other
    packages: str | None = "dpkg"  # dpkg | rpm | apk | opkg | None

    @classmethod
    def of(cls, image: Any) -> Target:
        """The target of an `ImageDef`."""
        return cls(init=image.init, packages=PACKAGE_MANAGERS.get(image.os.family))


def q(value: object) -> str:
    """A shell word for `value`."""
    return shlex.quote(str(value))


def undecided(why: str) -> str:
    """A probe statement: cannot decide (`why` may use the script's variables)."""
    return f'tb_msg="{why}"; return {EXIT_UNDECIDED}'


def script(kind: str, summary: str, variables: dict[str, object], body: str, wait: float) -> str:
    """The whole script around a probe body (see the module docstring); upper-case
    `variables` are exported (awk reads them from ENVIRON)."""
    assigns = "\n".join(f"{name}={q(value)}" for name, value in variables.items())
    exported = [name for name in variables if name.isupper()]
    if exported:
        assigns += "\nexport " + " ".join(exported)
    return f"""# testbed check primitive: {kind} ({summary.replace(chr(10), " ")})
PATH=${{TESTBED_CHECK_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}}
LC_ALL=C
export PATH LC_ALL
tb_root=${{TESTBED_CHECK_ROOT:-}}
tb_have() {{ command -v "$1" >/dev/null 2>&1; }}
{assigns}
tb_probe() {{
{body}
}}
tb_wait={round(wait)}
tb_start=$(date +%s)
while :; do
    tb_msg=
    tb_probe
    tb_rc=$?
    [ "$tb_rc" -eq 1 ] || break
    [ $(( $(date +%s) - tb_start )) -lt "$tb_wait" ] || break
    sleep 1
done
tb_line=
while IFS= read -r tb_part; do tb_line="$tb_line$tb_part "; done <<TB_EOF
$tb_msg
TB_EOF
printf '%s\\n' "${{tb_line% }}"
exit "$tb_rc"
"""


def need(test: str, msg: str) -> str:
    """A probe line: fail with `msg` unless the shell `test` succeeds."""
    return f'    {test} || {{ tb_msg="{msg}"; return 1; }}'


def need_tool(tool: str, why: str) -> str:
    """A probe line: cannot decide (`why`) when `tool` is not installed."""
    return f"    tb_have {tool} || {{ {undecided(why)}; }}"


def expect(flag: str, want: bool, what: str, yes: str, no: str) -> str:
    """Fail unless shell variable `flag` is `yes` (want) or `no` (not want)."""
    if want:
        return f'[ "${flag}" = yes ] || {{ tb_msg="{what} {no} (expected: {yes})"; return 1; }}'
    return f'[ "${flag}" = no ] || {{ tb_msg="{what} {yes} (expected: {no})"; return 1; }}'

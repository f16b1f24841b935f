"""Guest scripts of the system check primitives: `service`, `package`, `file`, `user`,
`group`, `cron`, `mount`, `sysctl` (see `testbed.model.checkscript` for their shape).

Generation-time choices: the service manager (systemd: `systemctl is-active` /
`is-enabled`, enabled meaning `enabled`, `alias` or `generated`; OpenRC: `rc-service NAME
status` and `rc-update show -v`, enabled meaning a sysinit, boot or default runlevel) and
the package database (dpkg, rpm, apk, opkg). Guest-side choices: `getent` or the files in
/etc; cron entries are read from the spool files of every family (Debian, EL, busybox) and
/etc/crontab and /etc/cron.d (file names with a dot are skipped, as cron does).
"""

from __future__ import annotations

from testbed.model.checks import (
    CronCheck,
    FileCheck,
    GroupCheck,
    MountCheck,
    PackageCheck,
    ServiceCheck,
    SysctlCheck,
    UserCheck,
)
from testbed.model.checkscript import Target, expect, need, need_tool, q, script, undecided

# --- service --------------------------------------------------------------------------


def service(p: ServiceCheck, target: Target) -> str:
    if target.init == "systemd":
        unit = p.name
        lines = [
            need_tool("systemctl", "systemctl not found: cannot tell the state of $TB_UNIT"),
            '    [ -d "$tb_root/run/systemd/system" ] || { '
            + undecided("systemd is not running: cannot tell $TB_UNIT")
            + "; }",
        ]
        if p.active is not None:
            lines += [
                '    tb_state=$(systemctl is-active "$TB_UNIT" 2>/dev/null | tail -n 1)',
                '    if [ "$tb_state" = active ]; then tb_on=yes; else tb_on=no; fi',
                "    " + expect("tb_on", p.active, "$TB_UNIT is", "active", "${tb_state:-unknown}"),
            ]
        if p.enabled is not None:
            lines += [
                '    tb_en=$(systemctl is-enabled "$TB_UNIT" 2>/dev/null | tail -n 1)',
                "    case $tb_en in enabled|alias|generated) tb_on=yes ;; *) tb_on=no ;; esac",
                "    " + expect("tb_on", p.enabled, "$TB_UNIT at boot is", "enabled", "${tb_en:-not installed}"),
            ]
    elif target.init == "openrc":
        unit = p.name.removesuffix(".service")
        lines = [need_tool("rc-service", "rc-service not found: cannot tell $TB_UNIT")]
        if p.active is not None:
            lines += [
                '    if rc-service "$TB_UNIT" status >/dev/null 2>&1; then tb_on=yes; else tb_on=no; fi',
                "    " + expect("tb_on", p.active, "$TB_UNIT is", "started", "not started"),
            ]
        if p.enabled is not None:
            lines += [
                '    if rc-update show -v 2>/dev/null | awk "$tb_runlevels"; then tb_on=yes; else tb_on=no; fi',
                "    " + expect("tb_on", p.enabled, "$TB_UNIT is", "in a boot runlevel", "in no boot runlevel"),
            ]
    else:
        body = "    " + undecided(f"no service manager is known for this guest (init {target.init})")
        return script("service", p.name, {"TB_UNIT": p.name}, body, 0)
    states = [s for s, on in (("active", p.active), ("enabled", p.enabled)) if on is not None]
    lines.append(f'    tb_msg="$TB_UNIT: {" and ".join(states)} as expected"; return 0')
    variables: dict[str, object] = {"TB_UNIT": unit}
    if target.init == "openrc":
        variables["tb_runlevels"] = OPENRC_RUNLEVELS_AWK
    return script("service", p.name, variables, "\n".join(lines), p.wait)


OPENRC_RUNLEVELS_AWK = r"""
BEGIN { FS = "|" }
{ name = $1; gsub(/[ \t]/, "", name) }
name == ENVIRON["TB_UNIT"] && $2 ~ /(sysinit|boot|default)/ { found = 1 }
END { exit !found }
"""
"""`rc-update show -v` lines (`name | runlevel ...`): exit 0 when TB_UNIT is in a boot runlevel."""


# --- package --------------------------------------------------------------------------

_PACKAGE_QUERIES = {
    "dpkg": (
        "dpkg-query",
        "case $(dpkg-query -W -f='${Status}' \"$tb_pkg\" 2>/dev/null) in *' installed') tb_on=yes ;; "
        "*) tb_on=no ;; esac",
    ),
    "rpm": ("rpm", 'if rpm -q "$tb_pkg" >/dev/null 2>&1; then tb_on=yes; else tb_on=no; fi'),
    "apk": ("apk", 'if apk info -e "$tb_pkg" >/dev/null 2>&1; then tb_on=yes; else tb_on=no; fi'),
    "opkg": (
        "opkg",
        'if opkg list-installed "$tb_pkg" 2>/dev/null | grep -q "^$tb_pkg "; then tb_on=yes; else tb_on=no; fi',
    ),
}


def package(p: PackageCheck, target: Target) -> str:
    query = _PACKAGE_QUERIES.get(target.packages or "")
    if query is None:
        body = "    " + undecided(f"no package database is known for this guest ({target.packages})")
    else:
        tool, test = query
        body = "\n".join([
            need_tool(tool, f"{tool} not found: cannot tell whether $tb_pkg is installed"),
            f"    {test}",
            "    " + expect("tb_on", p.installed, "package $tb_pkg is", "installed", "not installed"),
            '    tb_msg="package $tb_pkg: ' + ("installed" if p.installed else "not installed") + '"; return 0',
        ])  # fmt: skip
    return script("package", p.name, {"tb_pkg": p.name}, body, p.wait)


# --- file -----------------------------------------------------------------------------

_FILE_TYPES = {"file": ("-f", "a regular file"), "directory": ("-d", "a directory"), "symlink": ("-L", "a symlink")}


def file(p: FileCheck, _target: Target) -> str:
    v: dict[str, object] = {"tb_path": p.path}
    lines = [
        '    if [ ! -e "$tb_path" ] && [ ! -L "$tb_path" ]; then',
        f'        tb_msg="$tb_path does not exist"; return {0 if not p.exists else 1}',
        "    fi",
    ]
    if not p.exists:
        lines.append('    tb_msg="$tb_path exists, expected it not to"; return 1')
        return script("file", p.path, v, "\n".join(lines), p.wait)
    if p.type is not None:
        test, label = _FILE_TYPES[p.type]
        lines.append(f'    [ {test} "$tb_path" ] || {{ tb_msg="$tb_path is not {label}"; return 1; }}')
    if p.mode or p.mode_max or p.owner or p.group:
        lines += [
            "    tb_stat=$(stat -L -c '%a %u %U %g %G' \"$tb_path\" 2>/dev/null) || { "
            + undecided("cannot stat $tb_path")
            + "; }",
            "    set -- $tb_stat",
        ]
    if p.mode:
        v["tb_mode"] = int(p.mode, 8)
        lines.append(need('[ $((0$1)) -eq "$tb_mode" ]', f"$tb_path has mode $1, expected {p.mode}"))
    if p.mode_max:
        v["tb_mode_max"] = int(p.mode_max, 8)
        lines.append(
            '    [ $(( 0$1 & ~tb_mode_max )) -eq 0 ] || { tb_msg="$tb_path has mode $1, more than ' + p.mode_max
            + ' allows"; return 1; }'
        )  # fmt: skip
    if p.owner:
        v["tb_owner"] = p.owner
        lines.append('    [ "$2" = "$tb_owner" ] || [ "$3" = "$tb_owner" ] || { tb_msg="$tb_path is owned by $3, '
                     'expected $tb_owner"; return 1; }')  # fmt: skip
    if p.group:
        v["tb_group"] = p.group
        lines.append('    [ "$4" = "$tb_group" ] || [ "$5" = "$tb_group" ] || { tb_msg="$tb_path has group $5, '
                     'expected $tb_group"; return 1; }')  # fmt: skip
    for field, want in (("contains", True), ("lacks", False)):
        pattern = getattr(p, field)
        if pattern is None:
            continue
        v[f"tb_{field}"] = pattern
        lines += [
            f'    grep -E -q -e "$tb_{field}" -- "$tb_path" 2>/dev/null; tb_g=$?',
            '    [ "$tb_g" -le 1 ] || { ' + undecided("cannot read $tb_path") + "; }",
            f'    [ "$tb_g" -eq {0 if want else 1} ] || {{ tb_msg="$tb_path '
            + ("has no line matching" if want else "has a line matching")
            + f' /$tb_{field}/"; return 1; }}',
        ]
    lines.append('    tb_msg="$tb_path as expected"; return 0')
    return script("file", p.path, v, "\n".join(lines), p.wait)


# --- accounts -------------------------------------------------------------------------


def _entry(database: str) -> list[str]:
    """Probe lines that put the `database` (passwd | group) entry of `$TB_NAME` in `$tb_ent`."""
    return [
        "    if tb_have getent; then",
        f'        tb_ent=$(getent {database} "$TB_NAME" 2>/dev/null)',
        "    else",
        f"        tb_ent=$(awk -F: '$1 == ENVIRON[\"TB_NAME\"] {{ print; exit }}' \"$tb_root/etc/{database}\")",
        "    fi",
    ]


def _membership(user: str, group: str, want: bool) -> list[str]:
    """Probe lines: fail unless `user` is (want) or is not a member of `group`."""
    return [
        f'    case " $(id -nG {q(user)} 2>/dev/null) " in *{q(f" {group} ")}*) tb_on=yes ;; *) tb_on=no ;; esac',
        "    " + expect("tb_on", want, user, f"in group {group}", f"not in group {group}"),
    ]


def _absent(kind: str) -> list[str]:
    """Probe lines: hold when no account entry was found."""
    return [need('[ -z "$tb_ent" ]', f"{kind} $TB_NAME exists, expected it not to"),
            f'    tb_msg="no {kind} $TB_NAME, as expected"; return 0']  # fmt: skip


def user(p: UserCheck, _target: Target) -> str:
    lines = _entry("passwd")
    if not p.exists:
        return script("user", p.name, {"TB_NAME": p.name}, "\n".join(lines + _absent("user")), p.wait)
    lines += [
        need('[ -n "$tb_ent" ]', "no user $TB_NAME"),
        "    IFS=: read -r tb_u tb_x tb_uid tb_gid tb_gecos tb_home tb_shell <<TB_EOF",
        "$tb_ent",
        "TB_EOF",
    ]
    for field, value in (("uid", p.uid), ("home", p.home), ("shell", p.shell)):
        if value is not None:
            lines.append(f'    [ "$tb_{field}" = {q(value)} ] || {{ tb_msg="user $TB_NAME has {field} '
                         f'$tb_{field}, expected {value}"; return 1; }}')  # fmt: skip
    for group in p.groups:
        lines += _membership(p.name, group, True)
    for group in p.not_groups:
        lines += _membership(p.name, group, False)
    lines.append('    tb_msg="user $TB_NAME as expected"; return 0')
    return script("user", p.name, {"TB_NAME": p.name}, "\n".join(lines), p.wait)


def group(p: GroupCheck, _target: Target) -> str:
    lines = _entry("group")
    if not p.exists:
        return script("group", p.name, {"TB_NAME": p.name}, "\n".join(lines + _absent("group")), p.wait)
    lines.append(need('[ -n "$tb_ent" ]', "no group $TB_NAME"))
    if p.gid is not None:
        lines.append(f'    [ "$(printf \'%s\' "$tb_ent" | cut -d: -f3)" = {q(p.gid)} ] || '
                     f'{{ tb_msg="group $TB_NAME does not have gid {p.gid}"; return 1; }}')  # fmt: skip
    for member in p.members:
        lines += _membership(member, p.name, True)
    for member in p.not_members:
        lines += _membership(member, p.name, False)
    lines.append('    tb_msg="group $TB_NAME as expected"; return 0')
    return script("group", p.name, {"TB_NAME": p.name}, "\n".join(lines), p.wait)


# --- cron -----------------------------------------------------------------------------

CRON_AWK = r"""
/^[ \t]*(#|$)/ { next }
/^[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*=/ { next }
{
    if (substr($1, 1, 1) == "@") { sched = $1; i = 2 } else { sched = $1 " " $2 " " $3 " " $4 " " $5; i = 6 }
    if (ENVIRON["TB_SYS"] == 1) { if ($i != ENVIRON["TB_USER"]) next; i++ }
    cmd = ""
    for (; i <= NF; i++) cmd = (cmd == "" ? $i : cmd " " $i)
    print sched "\t" cmd
}
"""

CRON_MATCH_AWK = r"""
BEGIN { FS = "\t" }
$2 ~ ENVIRON["TB_RE"] && (ENVIRON["TB_SCHED"] == "" || $1 == ENVIRON["TB_SCHED"]) { f = 1 }
END { exit !f }
"""


def cron(p: CronCheck, _target: Target) -> str:
    v: dict[str, object] = {"TB_USER": p.user, "TB_RE": p.command, "TB_SCHED": p.schedule or "",
                            "tb_collect": CRON_AWK, "tb_match": CRON_MATCH_AWK}  # fmt: skip
    found = "has" if p.present else "has no"
    lines = [
        "    tb_entries=$(",
        '        for f in "$tb_root/var/spool/cron/crontabs/$TB_USER" "$tb_root/var/spool/cron/$TB_USER" \\',
        '            "$tb_root/etc/crontabs/$TB_USER"; do',
        '            [ -f "$f" ] && TB_SYS=0 awk "$tb_collect" "$f"',
        "        done",
        '        for f in "$tb_root/etc/crontab" "$tb_root"/etc/cron.d/*; do',
        '            [ -f "$f" ] || continue',
        '            case ${f##*/} in *.*|*~) [ "$f" = "$tb_root/etc/crontab" ] || continue ;; esac',
        '            TB_SYS=1 awk "$tb_collect" "$f"',
        "        done",
        "        true)",
        '    if printf \'%s\\n\' "$tb_entries" | awk "$tb_match"; then tb_on=yes; else tb_on=no; fi',
        "    " + expect("tb_on", p.present, "cron of $TB_USER", "has a matching entry", "has no matching entry"),
        f'    tb_msg="cron of $TB_USER {found} an entry matching /$TB_RE/ as expected"; return 0',
    ]
    return script("cron", f"{p.user}: {p.command}", v, "\n".join(lines), p.wait)


# --- mount ----------------------------------------------------------------------------

MOUNT_AWK = r"""$2 == ENVIRON["TB_TARGET"] { line = $0 } END { if (line != "") print line }"""
FSTAB_AWK = r"""/^[ \t]*#/ { next } $2 == ENVIRON["TB_TARGET"] { f = 1 } END { exit !f }"""


def mount(p: MountCheck, _target: Target) -> str:
    target = p.path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
    v: dict[str, object] = {"TB_TARGET": target, "tb_path": p.path, "tb_find": MOUNT_AWK, "tb_fstab": FSTAB_AWK}
    lines = [
        '    [ -r "$tb_root/proc/mounts" ] || { ' + undecided("/proc/mounts is not readable") + "; }",
        '    tb_line=$(awk "$tb_find" "$tb_root/proc/mounts")',
    ]
    if not p.mounted:
        lines.append('    [ -z "$tb_line" ] || { tb_msg="$tb_path is mounted: $tb_line"; return 1; }')
    else:
        lines += ['    [ -n "$tb_line" ] || { tb_msg="nothing is mounted on $tb_path"; return 1; }',
                  "    set -- $tb_line"]  # fmt: skip
        if p.fstype:
            v["tb_fstype"] = p.fstype
            lines.append('    [ "$3" = "$tb_fstype" ] || { tb_msg="$tb_path is $3, expected $tb_fstype"; return 1; }')
        if p.source:
            v["tb_source"] = p.source
            lines.append('    printf \'%s\\n\' "$1" | grep -E -q -e "$tb_source" || '
                         '{ tb_msg="$tb_path is mounted from $1, expected /$tb_source/"; return 1; }')  # fmt: skip
        for option in p.options:
            lines.append(f'    case ",$4," in *,{option},*) ;; *) tb_msg="$tb_path lacks mount option {option} '
                         '($4)"; return 1 ;; esac')  # fmt: skip
    if p.fstab is not None:
        lines += [
            '    if [ -r "$tb_root/etc/fstab" ] && awk "$tb_fstab" "$tb_root/etc/fstab"; then tb_on=yes; '
            "else tb_on=no; fi",
            "    " + expect("tb_on", p.fstab, "/etc/fstab", "has an entry for it", "has no entry for it"),
        ]
    lines.append('    tb_msg="$tb_path: mount as expected"; return 0')
    return script("mount", p.path, v, "\n".join(lines), p.wait)


# --- sysctl ---------------------------------------------------------------------------


def sysctl(p: SysctlCheck, _target: Target) -> str:
    path = "/proc/sys/" + (p.key if "/" in p.key else p.key.replace(".", "/"))
    v: dict[str, object] = {"tb_key": p.key, "tb_path": path}
    lines = [
        "    tb_file=$tb_root$tb_path",
        '    [ -r "$tb_file" ] || { tb_msg="no sysctl $tb_key on this kernel"; return 1; }',
        "    tb_val=$(tr '\\t' ' ' < \"$tb_file\" | tr -s ' ')",
    ]
    if p.value is not None:
        v["tb_want"] = " ".join(p.value.split())
        lines.append(need('[ "$tb_val" = "$tb_want" ]', "$tb_key = $tb_val, expected $tb_want"))
    else:
        lines.append('    case $tb_val in ""|*[!0-9-]*) tb_msg="$tb_key = $tb_val is not an integer"; return 1 ;; esac')
        for name, test, words in (("min", "-ge", "at least"), ("max", "-le", "at most")):
            bound = getattr(p, name)
            if bound is not None:
                v[f"tb_{name}"] = bound
                failure = f"$tb_key = $tb_val, expected {words} $tb_{name}"
                lines.append(need(f'[ "$tb_val" {test} "$tb_{name}" ]', failure))
    lines.append('    tb_msg="$tb_key = $tb_val as expected"; return 0')
    return script("sysctl", p.key, v, "\n".join(lines), p.wait)

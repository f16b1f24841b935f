"""High-impact command classes, decided by parsing the command line (see `shell.parse`).

Contract: `classify(command)` returns the sorted unique class names of `command`;
`analyze(command)` returns one `Hit` per (class, simple command, rule) with the argv that
triggered it, for evidence. Neither ever raises. A class is only assigned for a command
the shell would actually start: `echo "rm -rf /"`, `man kill`, `grep -- --force f` and
`printf 'systemctl stop x'` are not high-impact. Launchers (`sudo`, `env`, `timeout`,
`xargs`, `bash -c`, `ssh host '…'`, `find -exec`, …) are looked through.

Classes and their rules (a command name means its basename, `/usr/sbin/reboot` = `reboot`):

- service_stop: `systemctl stop/disable/mask/kill/isolate/rescue/emergency UNIT`; `service X
  stop`; `rc-service X stop`; `/etc/init.d/X stop`; `invoke-rc.d X stop`; `update-rc.d X
  disable/remove`; `rc-update del X`; `chkconfig X off`/`--del X`; `sv stop/down/kill X`;
  `supervisorctl stop X`; `initctl stop X`
- force_kill: SIGKILL: `kill -9/-KILL/-SIGKILL/-s KILL/-n 9/--signal KILL`, same for
  `pkill`, `killall`, `killall5`; `systemctl kill -s KILL`; `docker/podman kill` (SIGKILL unless `-s`
  names another signal)
- recursive_force_remove: `rm` with a recursive flag (`-r`, `-R`, `--recursive`) and a force
  flag (`-f`, `--force`) in any spelling or order; `find … -delete` (deletes a whole tree
  without prompting; decided: counts); `git clean` with `-f` and `-d`
- network_flush: `ip addr/route/rule flush`; `ip link set X down`; `ip link delete X`; `ip
  route del default`; `route del default`; `ifdown`; `ifconfig X down`; `nmcli con down`,
  `dev disconnect`, `con delete`, `networking off`; `dhclient -r/-x`;
  `iptables/ip6tables/ebtables/arptables -F/--flush`; `nft flush/delete
  ruleset/table/chain`; stopping a network service (networking, network, NetworkManager,
  systemd-networkd, wicked). `ip neigh flush` (a cache) and `ip addr del` do not count
- firewall_disable: `ufw disable/reset`; stopping/disabling/masking a firewall service
  (firewalld, ufw, nftables, iptables, ip6tables, netfilter-persistent, shorewall, ferm,
  csf); flushing packet-filter rules (`iptables -F`, `nft flush ruleset` — also
  network_flush); `iptables -P CHAIN ACCEPT`; `firewall-cmd --set-default-zone=trusted`
- security_disable: `setenforce 0/Permissive`; `aa-teardown`, `aa-disable`, `aa-complain`;
  stopping/disabling apparmor, auditd, selinux services; `auditctl -e 0` or `-D`
- force_flag: options that force past a safety check or bypass trust: `--force`,
  `--force=…`, `--force-*` (except `--force-conf*`, `--force-reinstall`, `--force-local`,
  `--force-color`) on any command other than data commands and `rm/cp/mv/ln/gzip…` (whose -f
  only silences prompts); `--insecure`, `--no-check-certificate`, `--nogpgcheck`,
  `--no-gpg-checks`, `--allow-unauthenticated`, `--allow-untrusted`,
  `--allow-insecure-repositories`, `--allow-downgrades`, `--allow-remove-essential`,
  `--allow-change-held-packages`, `--force-yes`, `--nodeps`, `--trusted-host`,
  `--break-system-packages`, `--no-verify`, `--no-verify-ssl`, `--insecure-skip-tls-verify`,
  `--skip-tls-verify`, `--unsafe-perm`, `--no-preserve-root`, `--tls-verify=false`,
  `--strict-ssl=false`; `--setopt=…gpgcheck=0/sslverify=0`; apt `-o`
  AllowUnauthenticated/AllowInsecureRepositories/Verify-Peer=false/Dpkg::Options::=--force-X;
  `curl -k`; `git -c http.sslVerify=false`, `git config http.sslVerify false`;
  `ssh/scp/sftp/rsync/ssh-copy-id -o StrictHostKeyChecking=no` or
  `UserKnownHostsFile=/dev/null`; env `GIT_SSL_NO_VERIFY=1`,
  `NODE_TLS_REJECT_UNAUTHORIZED=0`, `PYTHONHTTPSVERIFY=0`,
  `ANSIBLE_HOST_KEY_CHECKING=False`, `GIT_SSH_COMMAND=…StrictHostKeyChecking=no`; short `-f`
  where it means force: `git push -f`, `git branch -D`, `docker/podman rm/rmi/prune -f`,
  `umount -f`, `rmmod/modprobe/insmod -f`, `userdel/groupdel -f`, `systemctl -f`,
  `reboot/halt/poweroff -f`, `mkfs.xfs/btrfs -f`, `mkfs.ext*/mke2fs -F`, `mkswap/wipefs -f`,
  `lvremove/vgremove/pvremove/pvcreate -f`, `zpool/zfs -f`, `npm -f`. NOT `apt-get -f` (=
  `--fix-broken`)
- power_state: `reboot`, `poweroff`, `halt`, `shutdown` (not `-c`/`-k`), `init`/`telinit
  0/6`, `systemctl reboot/poweroff/halt/kexec/suspend/hibernate/…`, `systemctl start/isolate
  reboot.target…`, `loginctl reboot/poweroff`, `kexec -e`, a write to `/proc/sysrq-trigger`
- disk_write: writes to a block device (`/dev/sdX`, `vdX`, `xvdX`, `nvmeXnY[pZ]`, `mmcblkX`,
  `dm-N`, `mdN`, `loopN`, `/dev/mapper/…`, `/dev/disk/by-…`, `/dev/VG/LV`): `dd of=DEV`;
  `mkfs*`, `mke2fs`, `mkswap`, `shred`, `blkdiscard`, `wipefs -a/-o`,
  `fdisk`/`gdisk`/`cfdisk` (not `-l`), `sfdisk` (not listing/dump), `parted` with a changing
  subcommand or interactive, `sgdisk` with a changing option, `pvcreate`, `vgcreate`, `mdadm
  --create/--zero-superblock`, `cryptsetup luksFormat/erase`, `zpool create/labelclear`,
  `badblocks -w`, `nvme format/sanitize`, `hdparm --security-erase`, `cp/tee/pv` onto a
  device, and any output redirection (`>`, `>>`, `&>`) onto a device
- permission_broad: `chmod` granting world-write (`777`, `o+w`, `a+rwx` …) recursively, or
  on a system path (`/`, `/etc`, `/usr`, `/var` …, except `/tmp`, `/var/tmp` and sticky
  modes); `chmod` setting setuid/setgid on a system path; `chmod/chown/chgrp -R` on `/`, an
  essential top-level directory or its `/*`
- package_remove: `apt/apt-get/aptitude remove/purge/autoremove/autopurge`; `dpkg
  -r/-P/--remove/--purge`; `dnf/yum/microdnf/tdnf remove/erase/autoremove`; `rpm -e`; `apk
  del`; `zypper remove/rm`; `pacman -R*`; `snap remove`; `flatpak uninstall`. Language
  package managers (pip, npm) do not count
- user_delete: `userdel X`; `deluser X` with one operand (with two it removes a group
  membership)
- history_tamper: `history -c/-d`; `unset HISTFILE`; `set +o history`; setting or exporting
  `HISTFILE` to `/dev/null` or empty, or `HISTSIZE`/`HISTFILESIZE` to 0;
  `rm/shred/truncate/unlink` of, `ln -s … ` over, or a truncating redirect (`>`) onto a
  shell history file (`.bash_history`, `.zsh_history`, `.sh_history`, `.ash_history`,
  `.history`)
- fork_bomb: a function that calls itself inside a pipeline or in the background (`:(){ :|:&
  };:`, `bomb(){ bomb|bomb& }`)
- pipe_to_shell: a download piped or substituted into a shell interpreter: `curl … | sh`,
  `wget -O- … | sudo bash`, `bash <(curl …)`, `sh -c "$(curl …)"`
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from testbed.analysis.shell import SHELLS, Parsed, SimpleCommand, command_name, parse

IMPACT_CLASSES: tuple[str, ...] = (
    "service_stop",
    "force_kill",
    "recursive_force_remove",
    "network_flush",
    "firewall_disable",
    "security_disable",
    "force_flag",
    "power_state",
    "disk_write",
    "permission_broad",
    "package_remove",
    "user_delete",
    "history_tamper",
    "fork_bomb",
    "pipe_to_shell",
)
"""Every class `classify` can return."""


@dataclass(frozen=True)
class Hit:
    """One piece of evidence: `impact_class` was assigned because of `argv` by `rule`.

    `targets` are the operands the rule judged (paths, devices, units), `via` the
    launchers the command was found inside (e.g. `("sudo", "bash -c")`).
    """

    impact_class: str
    argv: tuple[str, ...]
    rule: str
    targets: tuple[str, ...] = ()
    via: tuple[str, ...] = ()

    def to_evidence(self) -> dict[str, object]:
        """A JSON-ready dict for a finding's evidence."""
        return {
            "class": self.impact_class,
            "argv": list(self.argv),
            "rule": self.rule,
            "targets": list(self.targets),
            "via": list(self.via),
        }


# --------------------------------------------------------------------------- helpers


@dataclass
class Args:
    """Parsed command arguments: flags (`-r`, `--force`), option values, operands."""

    flags: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    operands: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)  # option tokens as written, before --

    def has(self, *names: str) -> bool:
        return any(n in self.flags for n in names)

    def value(self, *names: str) -> list[str]:
        return [v for n in names for v in self.values.get(n, [])]


def getopt(args: Sequence[str], short_arg: str = "", long_arg: Iterable[str] = ()) -> Args:
    """GNU-style scan of all of `args` (options may follow operands); `--` ends options.

    `short_arg` lists short letters taking a value, `long_arg` long names taking one.
    """
    long_set = set(long_arg)
    out = Args()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out.operands.extend(args[i + 1 :])
            break
        if a.startswith("--") and len(a) > 2:
            out.options.append(a)
            name, eq, val = a.partition("=")
            out.flags.add(name)
            if eq:
                out.values.setdefault(name, []).append(val)
            elif name[2:] in long_set and i + 1 < len(args):
                out.values.setdefault(name, []).append(args[i + 1])
                i += 1
        elif a.startswith("-") and len(a) > 1:
            out.options.append(a)
            i = _short_cluster(args, i, short_arg, out)
        else:
            out.operands.append(a)
        i += 1
    return out


def _short_cluster(args: Sequence[str], i: int, short_arg: str, out: Args) -> int:
    a = args[i]
    for k in range(1, len(a)):
        letter = "-" + a[k]
        out.flags.add(letter)
        if a[k] in short_arg:
            rest = a[k + 1 :]
            if rest:
                out.values.setdefault(letter, []).append(rest)
            elif i + 1 < len(args):
                out.values.setdefault(letter, []).append(args[i + 1])
                return i + 1
            return i
    return i


def _first_operand(
    args: Sequence[str], short_arg: str = "", long_arg: Iterable[str] = ()
) -> tuple[str | None, list[str]]:
    """(first operand, the operands after it) of a `TOOL [opts] SUBCOMMAND …` line."""
    got = getopt(args, short_arg, long_arg)
    if not got.operands:
        return None, []
    return got.operands[0], got.operands[1:]


def _unit_name(unit: str) -> str:
    return re.sub(r"\.(service|socket|target|timer)$", "", command_name(unit))


_Result = Iterator[tuple[str, tuple[str, ...]]]
"""A matcher yields (rule id, targets)."""

ESSENTIAL_TOP = frozenset(
    {
        "bin",
        "boot",
        "dev",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "proc",
        "root",
        "run",
        "sbin",
        "sys",
        "usr",
        "var",
    }
)
"""Top-level directories whose (recursive) removal or re-ownership wrecks the system."""

_SYSTEM_TOP = frozenset(
    {"bin", "boot", "etc", "lib", "lib32", "lib64", "libx32", "opt", "root", "sbin", "srv", "usr", "var"}
)


def normalize_path(path: str) -> str:
    """`//usr/./bin/` → `/usr/bin`; keeps a trailing `/*` glob as `/usr/*`."""
    star = path.endswith("/*") and len(path) > 2
    base = path[:-2] if star else path
    if not base.startswith("/"):
        return path
    norm = posixpath.normpath(base)
    norm = "/" + norm.lstrip("/")
    return (norm.rstrip("/") + "/*") if star else norm


def is_root_or_essential(path: str) -> bool:
    """True for `/`, `/*`, an essential top-level dir (`/usr`) or its contents glob (`/usr/*`)."""
    norm = normalize_path(path)
    if norm in ("/", "/*", "/.*"):
        return True
    if norm.endswith("/*"):
        norm = norm[:-2]
    parts = [p for p in norm.split("/") if p]
    return norm.startswith("/") and len(parts) == 1 and parts[0] in ESSENTIAL_TOP


def _is_system_path(path: str) -> bool:
    norm = normalize_path(path)
    if not norm.startswith("/"):
        return False
    if norm in ("/", "/*"):
        return True
    parts = [p for p in norm.split("/") if p]
    if parts[:2] == ["var", "tmp"]:
        return False
    return parts[0] in _SYSTEM_TOP


BLOCK_DEVICE = re.compile(
    r"^/dev/(?:"
    r"(?:sd|hd|vd|xvd)[a-z]+\d*|nvme\d+n\d+(?:p\d+)?|mmcblk\d+(?:p\d+)?|dm-\d+|md\d+|md/[^/]+"
    r"|loop\d+|nbd\d+(?:p\d+)?|sr\d+|rbd\d+|zd\d+|bcache\d+|root|mapper/(?!control$)[^/]+"
    r"|disk/by-[a-z-]+/[^/]+"
    r"|(?!(?:pts|fd|shm|net|input|snd|bus|char|cpu|dri|hugepages|mqueue|usb|v4l|block|disk"
    r"|mapper|md|vfio|serial|tty|hidraw|log)/)[A-Za-z0-9_.+-]+/[A-Za-z0-9_.+-]+"
    r")$"
)
"""Block-device paths (disks, partitions, RAID, device-mapper, LVM `/dev/VG/LV`)."""


def is_block_device(path: str) -> bool:
    """True if `path` names a block device (not /dev/null, /dev/zero, ttys …)."""
    return bool(BLOCK_DEVICE.match(path))


DATA_COMMANDS = frozenset(
    {
        "echo",
        "printf",
        "grep",
        "egrep",
        "fgrep",
        "zgrep",
        "rg",
        "ag",
        "ack",
        "man",
        "info",
        "help",
        "whatis",
        "apropos",
        "which",
        "whereis",
        "type",
        "logger",
        "wall",
        "write",
        "test",
        "[",
        "true",
        "false",
        ":",
        "jq",
        "yq",
        "awk",
        "gawk",
        "mawk",
        "sed",
        "cat",
        "tac",
        "less",
        "more",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "tee",
        "column",
        "xxd",
        "od",
        "hexdump",
        "base64",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "stat",
        "file",
        "ls",
        "diff",
        "cmp",
        "comm",
        "paste",
        "fold",
        "fmt",
        "nl",
        "strings",
        "basename",
        "dirname",
        "readlink",
        "realpath",
        "printenv",
        "locate",
        "history",
        "read",
        "set",
        "export",
        "unset",
        "declare",
        "local",
        "alias",
        "compgen",
        "complete",
        "tldr",
        "cowsay",
    }
)
"""Commands whose arguments are data (patterns, text, names): generic option rules skip them."""


# --------------------------------------------------------------------------- service_stop

_STOP_ACTIONS = frozenset({"stop", "force-stop", "graceful-stop", "kill", "disable", "zap"})
_SYSTEMCTL_ARG = "tpsHMno"
_SYSTEMCTL_LONG = (
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
)
_SYSTEMCTL_STOP = frozenset({"stop", "disable", "mask", "kill", "isolate", "rescue", "emergency"})
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


def _systemctl(cmd: SimpleCommand) -> tuple[str | None, list[str], Args]:
    got = getopt(cmd.args, _SYSTEMCTL_ARG, _SYSTEMCTL_LONG)
    verb = got.operands[0] if got.operands else None
    return verb, got.operands[1:], got


def stopped_units(cmd: SimpleCommand) -> tuple[str, ...] | None:
    """Units/services `cmd` stops or disables (names without `.service`), or None.

    An empty tuple means "stops something unnamed" (e.g. `systemctl isolate rescue`).
    """
    name, args = cmd.name, cmd.args
    if name == "systemctl":
        verb, units, _ = _systemctl(cmd)
        if verb in _SYSTEMCTL_STOP:
            return tuple(_unit_name(u) for u in units)
        return None
    if name in ("service", "invoke-rc.d", "rc-service"):
        ops = getopt(args).operands
        if len(ops) >= 2 and ops[1] in _STOP_ACTIONS:
            return (ops[0],)
        return None
    if re.search(r"/(init\.d|rc\.d)/[^/]+$", cmd.argv[0] if cmd.argv else ""):
        return (name,) if args and args[0] in _STOP_ACTIONS else None
    return _other_service_managers(name, args)


def _other_service_managers(name: str, args: Sequence[str]) -> tuple[str, ...] | None:
    ops = getopt(args, "w" if name == "sv" else "").operands
    if name == "update-rc.d" and len(ops) >= 2 and ops[1] in ("disable", "remove"):
        return (ops[0],)
    if name == "rc-update" and len(ops) >= 2 and ops[0] in ("del", "delete"):
        return (ops[1],)
    if name == "chkconfig":
        if "--del" in args:
            return tuple(a for a in args if not a.startswith("-"))
        if len(ops) >= 2 and ops[-1] == "off":
            return (ops[0],)
    if name == "sv" and len(ops) >= 2 and ops[0] in ("stop", "down", "d", "kill", "k", "force-stop", "exit", "x"):
        return tuple(ops[1:])
    if name in ("supervisorctl", "initctl") and len(ops) >= 2 and ops[0] == "stop":
        return tuple(ops[1:])
    return None


def _service_stop(cmd: SimpleCommand) -> _Result:
    units = stopped_units(cmd)
    if units is not None:
        initd = re.search(r"/(init\.d|rc\.d)/", cmd.argv[0])
        yield ("initd-stop" if initd else f"{cmd.name}-stop"), units


# --------------------------------------------------------------------------- force_kill


def _is_kill_signal(sig: str) -> bool:
    return re.sub(r"^SIG", "", sig.upper()) in ("KILL", "9")


def _sends_sigkill(args: Sequence[str]) -> bool:
    """True if kill/pkill/killall-style arguments select SIGKILL.

    Accepts `-9`, `-KILL`, `-SIGKILL`, `-kill`, `-s KILL`, `-sKILL`, `-n 9`,
    `--signal KILL`, `--signal=9`; stops at `--`.
    """
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return False
        if a in ("-s", "--signal", "-n") and i + 1 < len(args):
            if _is_kill_signal(args[i + 1]):
                return True
            i += 2
            continue
        if a.startswith("--signal=") and _is_kill_signal(a.split("=", 1)[1]):
            return True
        if a.startswith("-") and (_is_kill_signal(a[1:]) or (a.startswith("-s") and _is_kill_signal(a[2:]))):
            return True
        i += 1
    return False


def _force_kill(cmd: SimpleCommand) -> _Result:
    name = cmd.name
    if name in ("kill", "pkill", "killall", "killall5", "skill"):
        if _sends_sigkill(cmd.args):
            yield f"{name}-sigkill", tuple(a for a in cmd.args if not a.startswith("-"))
    elif name == "systemctl":
        verb, units, got = _systemctl(cmd)
        sigs = got.value("-s", "--signal", "--kill-value")
        if verb == "kill" and any(_is_kill_signal(s) for s in sigs):
            yield "systemctl-kill-sigkill", tuple(units)
    elif name in ("docker", "podman", "nerdctl"):
        sub, rest = _first_operand(cmd.args, "sH", ("signal", "host"))
        if sub == "kill":
            got = getopt(cmd.args[cmd.args.index("kill") + 1 :], "s", ("signal",))
            sigs = got.value("-s", "--signal")
            if not sigs or any(_is_kill_signal(s) for s in sigs):
                yield f"{name}-kill", tuple(rest)


# --------------------------------------------------------------------------- recursive rm


def _recursive_force_remove(cmd: SimpleCommand) -> _Result:
    name = cmd.name
    if name == "rm":
        got = getopt(cmd.args)
        if got.has("-r", "-R", "--recursive") and got.has("-f", "--force"):
            yield "rm-recursive-force", tuple(got.operands)
    elif name == "find" and "-delete" in cmd.args:
        yield "find-delete", tuple(_find_roots(cmd.args))
    elif name == "git":
        sub, _rest = _first_operand(cmd.args, "Cc", ("git-dir", "work-tree", "namespace"))
        if sub == "clean":
            got = getopt(cmd.args[cmd.args.index("clean") + 1 :], "e", ("exclude",))
            if got.has("-f", "--force") and got.has("-d"):
                yield "git-clean-force", tuple(got.operands)


def _find_roots(args: Sequence[str]) -> list[str]:
    roots: list[str] = []
    for a in args:
        if a in ("-H", "-L", "-P") or a.startswith("-O") or a.startswith("-D"):
            continue
        if a.startswith("-") or a in ("(", "!", ")"):
            break
        roots.append(a)
    return roots or ["."]


# --------------------------------------------------------------------------- network_flush

_NETWORK_UNITS = frozenset({"networking", "network", "NetworkManager", "systemd-networkd", "wicked", "network-manager"})
_FIREWALL_UNITS = frozenset(
    {
        "firewalld",
        "ufw",
        "nftables",
        "iptables",
        "ip6tables",
        "netfilter-persistent",
        "iptables-persistent",
        "shorewall",
        "shorewall6",
        "ferm",
        "csf",
        "ebtables",
    }
)
_SECURITY_UNITS = frozenset({"apparmor", "auditd", "selinux", "selinux-autorelabel"})
_IPTABLES = frozenset(
    {
        "iptables",
        "ip6tables",
        "iptables-legacy",
        "ip6tables-legacy",
        "iptables-nft",
        "ip6tables-nft",
        "ebtables",
        "arptables",
    }
)
_IP_OBJECTS = ("address", "route", "rule", "neighbour", "link", "maddress", "netns")


def _ip_object(word: str) -> str | None:
    if word in ("addr", "a"):
        return "address"
    if word in ("neigh", "neighbor", "n"):
        return "neighbour"
    for obj in _IP_OBJECTS:
        if obj.startswith(word):
            return obj
    return None


def _prefix(word: str | None, full: str, min_len: int = 1) -> bool:
    return word is not None and len(word) >= min_len and full.startswith(word)


def _ip_rules(args: Sequence[str]) -> _Result:
    got = getopt(args, "fbnr", ("family", "batch", "netns", "rcvbuf"))
    ops = got.operands
    if len(ops) < 2:
        return
    obj, verb, rest = _ip_object(ops[0]), ops[1], ops[2:]
    if obj in ("address", "route", "rule") and _prefix(verb, "flush"):
        yield f"ip-{obj}-flush", tuple(rest)
    elif obj == "link" and _prefix(verb, "set") and "down" in rest:
        yield "ip-link-down", tuple(r for r in rest if r not in ("dev", "down"))
    elif obj == "link" and _prefix(verb, "delete", 3):
        yield "ip-link-delete", tuple(r for r in rest if r != "dev")
    elif obj == "route" and _prefix(verb, "delete", 3) and rest[:1] in (["default"], ["0.0.0.0/0"]):
        yield "ip-route-del-default", tuple(rest)


def _packet_filter_flush(cmd: SimpleCommand) -> _Result:
    """iptables -F / nft flush|delete: both network_flush and firewall_disable."""
    name = cmd.name
    if name in _IPTABLES:
        opts = [a for a in cmd.args if a.startswith("-")]
        if "-F" in opts or "--flush" in opts or any(re.fullmatch(r"-[tw]?F", a) for a in opts):
            yield f"{name}-flush", tuple(a for a in cmd.args if not a.startswith("-"))
    elif name == "nft":
        got = getopt(cmd.args, "fIDo", ("file", "includepath", "define"))
        words = " ".join(got.operands).replace(";", " ").split()
        if len(words) >= 2 and words[0] in ("flush", "delete") and words[1] in ("ruleset", "table", "chain"):
            yield f"nft-{words[0]}-{words[1]}", tuple(words[2:])


def _network_flush(cmd: SimpleCommand) -> _Result:
    name, args = cmd.name, cmd.args
    if name == "ip":
        yield from _ip_rules(args)
    elif name in ("ifdown", "ifdown-wrapper"):
        yield "ifdown", tuple(a for a in args if not a.startswith("-"))
    elif name == "ifconfig" and len(args) >= 2 and "down" in args[1:]:
        yield "ifconfig-down", (args[0],)
    elif name == "route" and "del" in args and ("default" in args or "0.0.0.0" in args):
        yield "route-del-default", tuple(args)
    elif name == "nmcli":
        yield from _nmcli(args)
    elif name in ("dhclient", "dhcpcd") and ({"-r", "-x", "-k", "--release"} & set(args)):
        yield f"{name}-release", tuple(a for a in args if not a.startswith("-"))
    yield from _packet_filter_flush(cmd)
    units = stopped_units(cmd)
    if units and _NETWORK_UNITS & set(units):
        yield "network-service-stop", tuple(u for u in units if u in _NETWORK_UNITS)


def _nmcli(args: Sequence[str]) -> _Result:
    ops = getopt(args, "tfgemp", ("terse", "fields", "get-values", "escape", "mode", "colors", "wait")).operands
    if len(ops) < 2:
        return
    obj, verb = ops[0], ops[1]
    if _prefix(obj, "connection") and (_prefix(verb, "down", 2) or _prefix(verb, "delete", 3)):
        yield "nmcli-connection-down", tuple(ops[2:])
    elif _prefix(obj, "device") and (_prefix(verb, "disconnect", 3) or _prefix(verb, "delete", 3) or verb == "down"):
        yield "nmcli-device-disconnect", tuple(ops[2:])
    elif _prefix(obj, "networking") and verb == "off":
        yield "nmcli-networking-off", ()


# --------------------------------------------------------------------------- firewall / security


def _firewall_disable(cmd: SimpleCommand) -> _Result:
    name, args = cmd.name, cmd.args
    if name == "ufw":
        ops = getopt(args).operands
        if ops[:1] in (["disable"], ["reset"]) and "--dry-run" not in args:
            yield f"ufw-{ops[0]}", ()
    elif name == "firewall-cmd":
        zones = getopt(args, "", ("set-default-zone",)).value("--set-default-zone")
        if "trusted" in zones:
            yield "firewalld-trusted-default", ("trusted",)
    elif name in _IPTABLES:
        got = getopt(args, "tP", ("table", "policy"))
        policies = got.value("-P", "--policy")
        if policies and "ACCEPT" in got.operands:
            yield f"{name}-policy-accept", tuple(policies)
    yield from _packet_filter_flush(cmd)
    units = stopped_units(cmd)
    if units and _FIREWALL_UNITS & set(units):
        yield "firewall-service-stop", tuple(u for u in units if u in _FIREWALL_UNITS)


def _security_disable(cmd: SimpleCommand) -> _Result:
    name, args = cmd.name, cmd.args
    if name == "setenforce" and args and args[0].lower() in ("0", "permissive"):
        yield "setenforce-permissive", tuple(args)
    elif name in ("aa-teardown", "aa-disable", "aa-complain"):
        yield name, tuple(args)
    elif name == "auditctl":
        got = getopt(args, "efbrwpkaAdlRsS")
        if "0" in got.value("-e") or "-D" in got.flags:
            yield "auditctl-disable", ()
    units = stopped_units(cmd)
    if units and _SECURITY_UNITS & set(units):
        yield "security-service-stop", tuple(u for u in units if u in _SECURITY_UNITS)


# --------------------------------------------------------------------------- force_flag

_FORCE_EXEMPT_PREFIXES = ("--force-conf", "--force-reinstall", "--force-local", "--force-color", "--force-colour")
_FORCE_BENIGN = frozenset(
    {
        "rm",
        "cp",
        "mv",
        "ln",
        "install",
        "gzip",
        "gunzip",
        "bzip2",
        "bunzip2",
        "xz",
        "unxz",
        "zstd",
        "lz4",
        "pigz",
        "touch",
        "mkdir",
        "chmod",
        "chown",
        "chgrp",
        "ssh-keygen",
        "tar",
        "unzip",
        "zip",
    }
)
_TRUST_LONG = frozenset(
    {
        "--insecure",
        "--insecure-skip-tls-verify",
        "--no-check-certificate",
        "--nogpgcheck",
        "--no-gpgcheck",
        "--no-gpg-checks",
        "--no-gpg-check",
        "--allow-unauthenticated",
        "--allow-untrusted",
        "--allow-insecure-repositories",
        "--allow-downgrades",
        "--allow-remove-essential",
        "--allow-change-held-packages",
        "--force-yes",
        "--nodeps",
        "--trusted-host",
        "--break-system-packages",
        "--no-verify",
        "--no-verify-ssl",
        "--skip-tls-verify",
        "--unsafe-perm",
        "--no-preserve-root",
        "--ignore-certificate-errors",
        "--disable-gpg-check",
        "--skip-gpg-check",
        "--allow-unsigned",
    }
)
_FALSE_VALUED = frozenset(
    {
        "--tls-verify",
        "--tlsverify",
        "--strict-ssl",
        "--ssl-verify",
        "--sslverify",
        "--verify-ssl",
        "--check-certificate",
        "--gpgcheck",
        "--verify",
    }
)
_FALSE = frozenset({"0", "false", "no", "off"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_SETOPT = re.compile(
    r"(^|\.)(gpgcheck|repo_gpgcheck|localpkg_gpgcheck|sslverify)=(0|false|no|"
    r"False|No)$"
)
_APT_OPTION = re.compile(
    r"(?i)(AllowUnauthenticated|AllowInsecureRepositories|AllowDowngradeToInsecureRepositories"
    r"|AllowWeakRepositories)\s*=\s*[\"']?(1|true|yes)|Verify-(Peer|Host)\s*=\s*[\"']?(0|false|no)"
)
_STRICT_NO = re.compile(
    r"(?i)StrictHostKeyChecking\s*[= ]\s*[\"']?(no|off)\b"
    r"|UserKnownHostsFile\s*[= ]\s*[\"']?/dev/null"
)
_SSH_TOOLS = frozenset(
    {"ssh", "scp", "sftp", "rsync", "ssh-copy-id", "autossh", "sshfs", "sshpass", "ssh-keyscan", "mosh"}
)
_ENV_TRUST = {
    "GIT_SSL_NO_VERIFY": _TRUE,
    "NODE_TLS_REJECT_UNAUTHORIZED": frozenset({"0"}),
    "PYTHONHTTPSVERIFY": frozenset({"0"}),
    "ANSIBLE_HOST_KEY_CHECKING": _FALSE,
    "CURL_CA_BUNDLE": frozenset({""}),
    "REQUESTS_CA_BUNDLE": frozenset({""}),
}

_SHORT_FORCE: dict[str, str] = {
    "umount": "f",
    "rmmod": "f",
    "modprobe": "f",
    "insmod": "f",
    "userdel": "f",
    "groupdel": "f",
    "systemctl": "f",
    "reboot": "f",
    "halt": "f",
    "poweroff": "f",
    "mkfs.xfs": "f",
    "mkfs.btrfs": "f",
    "mkfs.f2fs": "f",
    "mkfs.ext2": "F",
    "mkfs.ext3": "F",
    "mkfs.ext4": "F",
    "mke2fs": "F",
    "mkswap": "f",
    "wipefs": "f",
    "lvremove": "f",
    "vgremove": "f",
    "pvremove": "f",
    "pvcreate": "f",
    "lvreduce": "f",
    "vgreduce": "f",
    "npm": "f",
}
"""Tools whose short flag (value) means "force" — and only those."""
_SHORT_ARGS: dict[str, str] = {
    "umount": "tO",
    "modprobe": "CdS",
    "systemctl": _SYSTEMCTL_ARG,
    "mkfs.xfs": "bdilLmnNprs",
    "mkfs.ext4": "bcCEgGiIjJLmMNoOrtTU",
    "mke2fs": "bcCEgGiIjJLmMNoOrtTU",
    "mkswap": "LpUv",
    "lvremove": "S",
    "npm": "C",
    "wipefs": "ot",
}
_CURL_ARG = "AbcCdDeEFHKmoPQrTuUwxXYyzt"


def _generic_force(cmd: SimpleCommand, got: Args) -> _Result:
    for opt in got.options:
        name, eq, value = opt.partition("=")
        if not opt.startswith("--"):
            continue
        if (name == "--force" or name.startswith("--force-")) and name != "--force-yes":
            if cmd.name not in _FORCE_BENIGN and not name.startswith(_FORCE_EXEMPT_PREFIXES):
                yield "option-force", (opt,)
        elif name in _TRUST_LONG:
            if not eq or name != "--insecure-skip-tls-verify" or value.lower() in _TRUE:
                yield "option-trust-bypass", (opt,)
        elif name in _FALSE_VALUED and eq and value.lower() in _FALSE:
            yield "option-trust-bypass", (opt,)
    for value in got.value("--setopt"):
        if _SETOPT.search(value):
            yield "setopt-no-verify", (value,)


def _force_flag(cmd: SimpleCommand) -> _Result:
    name = cmd.name
    yield from _env_trust(cmd)
    if not name or name in DATA_COMMANDS:
        return
    got = getopt(cmd.args, _SHORT_ARGS.get(name, ""))
    yield from _generic_force(cmd, got)
    yield from _tool_force(cmd, got)
    if name in _SSH_TOOLS:
        for a in cmd.args:
            if _STRICT_NO.search(a):
                yield "ssh-no-host-key-check", (a,)
    letter = _SHORT_FORCE.get(name)
    if letter and f"-{letter}" in got.flags:
        yield f"{name}-short-force", (f"-{letter}",)


def _tool_force(cmd: SimpleCommand, got: Args) -> _Result:
    name, args = cmd.name, cmd.args
    if name == "curl":
        if "-k" in getopt(args, _CURL_ARG).flags:
            yield "curl-insecure", ("-k",)
    elif name in ("apt", "apt-get", "aptitude"):
        for value in getopt(args, "oct", ("option", "config-file", "target-release")).value("-o", "--option"):
            if _APT_OPTION.search(value) or _dpkg_force(value):
                yield "apt-option-trust-bypass", (value,)
    elif name == "git":
        yield from _git_force(args)
    elif name in ("docker", "podman", "nerdctl"):
        ops = getopt(args, "H", ("host", "filter")).operands[:2]
        if ({"rm", "rmi", "prune"} & set(ops)) and "-f" in getopt(args, "H").flags:
            yield f"{name}-force", ("-f",)
    elif name in ("zpool", "zfs") and "-f" in got.flags:
        yield f"{name}-force", ("-f",)


def _dpkg_force(value: str) -> bool:
    m = re.search(r"--force-[\w-]+", value)
    return m is not None and not m.group(0).startswith(_FORCE_EXEMPT_PREFIXES)


def _git_force(args: Sequence[str]) -> _Result:
    got = getopt(args, "Cc", ("git-dir", "work-tree", "namespace", "exec-path"))
    for value in got.value("-c"):
        if re.fullmatch(r"(?i)http(\..*)?\.sslverify=(false|0|no|off)", value):
            yield "git-ssl-no-verify", (value,)
    ops = got.operands
    if not ops:
        return
    sub = ops[0]
    rest = list(args[args.index(sub) + 1 :])
    if sub == "push":
        sub_got = getopt(rest, "o", ("push-option", "repo", "receive-pack", "exec"))
        if "-f" in sub_got.flags or any(r.startswith("+") for r in sub_got.operands[1:]):
            yield "git-push-force", ("-f",)
    elif sub == "branch" and "-D" in getopt(rest).flags:
        yield "git-branch-force-delete", ("-D",)
    elif sub == "config":
        words = [w.lower() for w in getopt(rest, "f", ("file", "type")).operands]
        if len(words) >= 2 and re.fullmatch(r"http(\..*)?\.sslverify", words[0]) and words[1] in _FALSE:
            yield "git-config-ssl-no-verify", tuple(words[:2])


def _env_trust(cmd: SimpleCommand) -> _Result:
    pairs = list(cmd.assignments)
    if cmd.name in ("export", "env", "declare", "typeset", "readonly"):
        pairs += [a for a in cmd.args if "=" in a]
    for pair in pairs:
        key, _, value = pair.partition("=")
        allowed = _ENV_TRUST.get(key)
        if allowed is not None and value.strip("'\"").lower() in {v.lower() for v in allowed}:
            yield "env-trust-bypass", (pair,)
        elif key in ("GIT_SSH_COMMAND", "RSYNC_RSH") and _STRICT_NO.search(value):
            yield "env-ssh-no-host-key-check", (pair,)


# --------------------------------------------------------------------------- power_state


def _power_state(cmd: SimpleCommand) -> _Result:
    name, args = cmd.name, cmd.args
    yield from _sysrq(cmd)
    if "--help" in args or "--version" in args:
        return
    if name in ("reboot", "poweroff", "halt", "openrc-shutdown"):
        yield name, tuple(args)
    elif name == "shutdown":
        if not ({"-c", "-k", "--no-wall-only"} & set(getopt(args).flags)):
            yield "shutdown", tuple(args)
    elif name in ("init", "telinit") and args[:1] in (("0",), ("6",)):
        yield f"{name}-{args[0]}", tuple(args)
    elif name in ("systemctl", "loginctl"):
        verb, units, _ = _systemctl(cmd)
        if verb in _POWER_VERBS:
            yield f"{name}-{verb}", ()
        elif (
            name == "systemctl" and verb in ("start", "isolate") and any(_unit_name(u) in _POWER_TARGETS for u in units)
        ):
            yield "systemctl-power-target", tuple(units)
    elif name == "kexec" and {"-e", "--exec"} & set(args):
        yield "kexec-exec", ()


def _sysrq(cmd: SimpleCommand) -> _Result:
    for r in cmd.redirects:
        if r.op in (">", ">>", ">|", "&>") and normalize_path(r.target) == "/proc/sysrq-trigger":
            yield "sysrq-trigger", (r.target,)
    if cmd.name == "tee" and "/proc/sysrq-trigger" in cmd.args:
        yield "sysrq-trigger", ("/proc/sysrq-trigger",)


# --------------------------------------------------------------------------- disk_write

_DISK_TOOLS_ANY = frozenset(
    {"mkfs", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "shred", "blkdiscard", "pvcreate", "cfdisk"}
)
_PARTED_WRITE = frozenset(
    {
        "mklabel",
        "mktable",
        "mkpart",
        "mkpartfs",
        "rm",
        "resizepart",
        "resize",
        "move",
        "rescue",
        "name",
        "set",
        "toggle",
        "disk_set",
        "disk_toggle",
        "mkfs",
        "cp",
    }
)
_SFDISK_READ = frozenset(
    {
        "-l",
        "--list",
        "-d",
        "--dump",
        "-s",
        "--show-size",
        "-V",
        "--verify",
        "-J",
        "--json",
        "-g",
        "--show-geometry",
        "-r",
        "--reorder",
        "--backup-file",
    }
)
_SGDISK_READ = frozenset(
    {
        "-p",
        "--print",
        "-i",
        "--info",
        "-v",
        "--verify",
        "-b",
        "--backup",
        "-O",
        "--print-mbr",
        "-P",
        "--pretend",
        "-L",
        "--list-types",
        "-D",
        "--display-alignment",
    }
)


def _devices(words: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for w in words:
        value = w.split("=", 1)[1] if w.startswith("-") and "=" in w else w
        if is_block_device(value):
            out.append(value)
    return tuple(out)


def _disk_write(cmd: SimpleCommand) -> _Result:
    for r in cmd.redirects:
        if r.op in (">", ">>", ">|", "&>", "&>>", "<>") and is_block_device(r.target):
            yield "redirect-to-device", (r.target,)
    name, args = cmd.name, cmd.args
    devs = _devices(args)
    if name == "dd":
        targets = tuple(a[3:] for a in args if a.startswith("of=") and is_block_device(a[3:]))
        if targets:
            yield "dd-of-device", targets
        return
    if not devs:
        return
    rule = _disk_tool_rule(name, args, devs)
    if rule:
        yield rule, devs


def _disk_tool_rule(name: str, args: Sequence[str], devs: tuple[str, ...]) -> str | None:
    flags = getopt(args).flags
    if name in _DISK_TOOLS_ANY or name.startswith("mkfs."):
        return None if name.startswith(("mkfs.ext", "mke2fs")) and "-n" in flags else name
    if name == "wipefs":
        return "wipefs" if flags & {"-a", "--all", "-o", "--offset"} and not flags & {"-n", "--no-act"} else None
    if name in ("fdisk", "gdisk"):
        return None if flags & {"-l", "--list", "-s", "--getsz"} else name
    if name == "sfdisk":
        return None if flags & _SFDISK_READ else name
    if name == "sgdisk":
        return None if flags <= _SGDISK_READ and flags else name
    if name == "parted":
        return _parted(args)
    return _disk_tool_rule_more(name, args, flags)


def _disk_tool_rule_more(name: str, args: Sequence[str], flags: set[str]) -> str | None:
    words = set(args)
    if name == "mdadm" and flags & {"-C", "--create", "--zero-superblock"}:
        return "mdadm-create"
    if name == "cryptsetup" and words & {"luksFormat", "erase", "luksErase", "reencrypt"}:
        return "cryptsetup-format"
    if name == "zpool" and words & {"create", "labelclear"}:
        return "zpool-create"
    if name == "vgcreate":
        return "vgcreate"
    if name == "badblocks" and "-w" in flags:
        return "badblocks-write"
    if name == "nvme" and words & {"format", "sanitize", "write-zeroes"}:
        return "nvme-format"
    if name == "hdparm" and flags & {
        "--security-erase",
        "--security-erase-enhanced",
        "--trim-sector-ranges",
        "--write-sector",
    }:
        return "hdparm-erase"
    if name in ("cp", "pv", "tee", "install", "dcfldd", "ddrescue"):
        ops = getopt(args).operands
        if name == "tee" and any(is_block_device(o) for o in ops):
            return "tee-to-device"
        if len(ops) >= 2 and is_block_device(ops[-1]):
            return f"{name}-to-device"
    return None


def _parted(args: Sequence[str]) -> str | None:
    got = getopt(args, "a", ("align",))
    if got.has("-l", "--list"):
        return None
    ops = got.operands
    script = [w for o in ops[1:] for w in o.split()]
    if not script:
        return "parted-interactive"
    return "parted-write" if any(w in _PARTED_WRITE for w in script) else None


# --------------------------------------------------------------------------- permission_broad

_OCTAL = re.compile(r"^[0-7]{1,4}$")


def mode_bits(mode: str) -> tuple[bool, bool, bool]:
    """(grants world-write, sets setuid/setgid, sets sticky) for a chmod mode string."""
    if _OCTAL.match(mode):
        value = int(mode, 8)
        return bool(value & 0o002), bool(value & 0o6000), bool(value & 0o1000)
    world = setid = sticky = False
    for clause in mode.split(","):
        m = re.match(r"^([ugoa]*)(.*)$", clause)
        if not m:
            continue
        who, ops = m.group(1), m.group(2)
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", ops):
            if op == "-":
                continue
            if ("o" in who or "a" in who) and "w" in perms:
                world = True
            if "s" in perms and (not who or "u" in who or "g" in who or "a" in who):
                setid = True
            if "t" in perms:
                sticky = True
    return world, setid, sticky


def _permission_broad(cmd: SimpleCommand) -> _Result:
    name = cmd.name
    if name not in ("chmod", "chown", "chgrp"):
        return
    got = getopt(cmd.args, "", ("reference", "from"))
    ops = got.operands if got.has("--reference") else got.operands[1:]
    recursive = got.has("-R", "--recursive")
    if recursive and any(is_root_or_essential(p) for p in ops):
        yield f"{name}-recursive-system", tuple(p for p in ops if is_root_or_essential(p))
    if name != "chmod" or got.has("--reference") or not got.operands:
        return
    mode = _chmod_mode(cmd.args, got)
    world, setid, sticky = mode_bits(mode)
    system = tuple(p for p in ops if _is_system_path(p))
    if world and recursive:
        yield "chmod-world-writable-recursive", tuple(ops)
    elif world and system and not sticky:
        yield "chmod-world-writable-system", system
    if setid and system:
        yield "chmod-setid-system", system


def _chmod_mode(args: Sequence[str], got: Args) -> str:
    """The mode operand; symbolic modes like `-w`/`o-w` look like options to getopt."""
    for a in args:
        if re.fullmatch(r"[ugoa]*[-+=][rwxXstugo]*([,][ugoa]*[-+=][rwxXstugo]*)*|[0-7]{1,4}", a):
            return a
    return got.operands[0] if got.operands else ""


# --------------------------------------------------------------------------- package_remove


def _package_remove(cmd: SimpleCommand) -> _Result:
    name, args = cmd.name, cmd.args
    sub: str | None = None
    rest: list[str] = []
    if name in ("apt", "apt-get", "aptitude"):
        sub, rest = _first_operand(args, "oct", ("option", "config-file", "target-release"))
        ok = sub in ("remove", "purge", "autoremove", "autopurge")
    elif name in ("dnf", "yum", "microdnf", "tdnf", "dnf5"):
        sub, rest = _first_operand(
            args, "cdexR", ("repo", "enablerepo", "disablerepo", "installroot", "releasever", "exclude", "config")
        )
        ok = sub in ("remove", "erase", "autoremove", "rm")
    elif name == "apk":
        sub, rest = _first_operand(
            args, "Xpt", ("repository", "root", "arch", "cache-dir", "virtual", "repositories-file")
        )
        ok = sub == "del"
    elif name == "zypper":
        sub, rest = _first_operand(args, "Rc", ("root", "config"))
        ok = sub in ("remove", "rm")
    elif name in ("snap", "flatpak"):
        sub, rest = _first_operand(args)
        ok = sub in ("remove", "uninstall")
    else:
        yield from _package_remove_flags(name, args)
        return
    if ok:
        yield f"{name}-{sub}", tuple(rest)


def _package_remove_flags(name: str, args: Sequence[str]) -> _Result:
    got = getopt(args, "", ("root", "admindir", "instdir"))
    if name == "dpkg" and got.has("-r", "-P", "--remove", "--purge"):
        yield "dpkg-remove", tuple(got.operands)
    elif name == "rpm" and got.has("-e", "--erase"):
        yield "rpm-erase", tuple(got.operands)
    elif name == "pacman" and (any(re.fullmatch(r"-R[a-zA-Z]*", a) for a in args) or "--remove" in args):
        yield "pacman-remove", tuple(got.operands)


# --------------------------------------------------------------------------- user_delete


def _user_delete(cmd: SimpleCommand) -> _Result:
    if cmd.name == "userdel":
        got = getopt(cmd.args, "RPZ", ("root", "prefix", "selinux-user"))
        yield "userdel", tuple(got.operands)
    elif cmd.name == "deluser":
        got = getopt(cmd.args, "", ("backup-to", "conf", "config"))
        if len(got.operands) == 1 and not got.has("--group"):
            yield "deluser", tuple(got.operands)


# --------------------------------------------------------------------------- history_tamper

_HISTORY_FILES = frozenset({".bash_history", ".zsh_history", ".sh_history", ".ash_history", ".history", ".histfile"})


def _history_assign(pair: str) -> bool:
    key, _, value = pair.partition("=")
    value = value.strip("'\"")
    if key == "HISTFILE":
        return value in ("", "/dev/null")
    return key in ("HISTSIZE", "HISTFILESIZE", "SAVEHIST") and value == "0"


def _is_history_file(path: str) -> bool:
    return command_name(path.rstrip("/")) in _HISTORY_FILES or path == "$HISTFILE"


def _history_tamper(cmd: SimpleCommand) -> _Result:
    name, args = cmd.name, cmd.args
    for pair in cmd.assignments:
        if _history_assign(pair):
            yield "histfile-disabled", (pair,)
    for r in cmd.redirects:
        if r.op in (">", ">|", "&>") and _is_history_file(r.target):
            yield "history-file-truncated", (r.target,)
    if name == "history" and getopt(args, "d").has("-c", "-d"):
        yield "history-clear", tuple(args)
    elif name == "unset" and any(a in ("HISTFILE", "HISTSIZE") for a in args):
        yield "unset-histfile", tuple(args)
    elif name == "set" and args[:2] == ("+o", "history"):
        yield "set-no-history", ()
    elif name in ("export", "declare", "typeset", "readonly"):
        for a in args:
            if _history_assign(a):
                yield "histfile-disabled", (a,)
    elif name in ("rm", "shred", "truncate", "unlink", "ln", "cp", "srm", "wipe"):
        files = getopt(args, "so" if name == "truncate" else "").operands
        if name in ("ln", "cp"):
            files = files[-1:] if len(files) >= 2 else []
        hit = tuple(f for f in files if _is_history_file(f))
        if hit:
            yield f"history-file-{name}", hit


# --------------------------------------------------------------------------- pipe_to_shell

_DOWNLOADERS = frozenset({"curl", "wget", "fetch"})
_SUBST_DOWNLOAD = re.compile(r"^\s*(\$\(|<\(|`)\s*(sudo\s+)?(curl|wget|fetch)\b")


def _pipe_to_shell(cmd: SimpleCommand) -> _Result:
    if cmd.stdin_script and cmd.stdin_from in _DOWNLOADERS:
        yield "download-piped-to-shell", (cmd.stdin_from,)
    elif cmd.name in SHELLS and cmd.args:
        got = getopt(cmd.args, "oO")
        if got.operands and _SUBST_DOWNLOAD.match(got.operands[0]):
            yield "download-substituted-into-shell", (got.operands[0],)


# --------------------------------------------------------------------------- dispatch

_Matcher = Callable[[SimpleCommand], _Result]

MATCHERS: dict[str, _Matcher] = {
    "service_stop": _service_stop,
    "force_kill": _force_kill,
    "recursive_force_remove": _recursive_force_remove,
    "network_flush": _network_flush,
    "firewall_disable": _firewall_disable,
    "security_disable": _security_disable,
    "force_flag": _force_flag,
    "power_state": _power_state,
    "disk_write": _disk_write,
    "permission_broad": _permission_broad,
    "package_remove": _package_remove,
    "user_delete": _user_delete,
    "history_tamper": _history_tamper,
    "pipe_to_shell": _pipe_to_shell,
}
"""Per-command matchers by class (fork_bomb needs the whole parse; see `_fork_bombs`)."""


def hits_for_command(cmd: SimpleCommand) -> list[Hit]:
    """All hits of one simple command (no recursion: `shell.parse` already unwrapped it)."""
    hits: list[Hit] = []
    for cls, matcher in MATCHERS.items():
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for rule, targets in matcher(cmd):
            if (rule, targets) not in seen:
                seen.add((rule, targets))
                hits.append(Hit(cls, cmd.argv, rule, targets, cmd.via))
    return hits


def _fork_bombs(parsed: Parsed) -> list[Hit]:
    hits: list[Hit] = []
    for cmd in parsed.commands:
        fn = cmd.function
        if fn and cmd.name == fn and (cmd.pipe_len > 1 or cmd.background):
            hits.append(Hit("fork_bomb", cmd.argv, "self-replicating-function", (fn,), cmd.via))
            break
    return hits


def analyze(command: str) -> list[Hit]:
    """Evidence for every high-impact class of `command`, in command order. Never raises."""
    try:
        parsed = parse(command)
        hits = [h for cmd in parsed.commands for h in hits_for_command(cmd)]
        return hits + _fork_bombs(parsed)
    except (RecursionError, IndexError, ValueError, TypeError, AttributeError, KeyError):
        return []


def classify(command: str) -> list[str]:
    """Sorted unique high-impact class names of `command` (`[]` if none). Never raises."""
    return sorted({h.impact_class for h in analyze(command)})

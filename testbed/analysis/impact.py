"""High-impact command classes: rules over the effects of each command (`command.effects_of`).

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

The rules only read `Effects` (what each simple command does, parsed once by
`testbed.analysis.command`); which words mean what is the grammars' business.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from testbed.analysis.command.effects import Effects, ServiceOp
from testbed.analysis.command.line import CommandLine, effects_of
from testbed.analysis.command.paths import is_root_or_essential, is_system_path

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


_Result = Iterator[tuple[str, tuple[str, ...]]]
"""A rule yields (rule id, targets)."""

NETWORK_UNITS = frozenset({"networking", "network", "NetworkManager", "systemd-networkd", "wicked", "network-manager"})
FIREWALL_UNITS = frozenset(
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
SECURITY_UNITS = frozenset({"apparmor", "auditd", "selinux", "selinux-autorelabel"})
_FLUSHES = frozenset({"ip-address-flush", "ip-route-flush", "ip-rule-flush"})
"""The flushes network_flush counts (not the neighbour cache, conntrack: see `study`)."""
_REMOVAL_RULES = {"rm": "rm-recursive-force", "find": "find-delete", "git": "git-clean-force"}


def _stopping(eff: Effects) -> list[ServiceOp]:
    return [op for op in eff.services if op.action is not None]


def _stopped_in(eff: Effects, units: frozenset[str]) -> tuple[str, ...]:
    """The stopped or disabled services of `eff` that are among `units`."""
    return tuple(s for op in _stopping(eff) for s in op.services if s in units)


def _service_stop(eff: Effects) -> _Result:
    for op in _stopping(eff):
        yield ("initd-stop" if op.tool == "init.d" else f"{op.tool}-stop"), op.services


def _force_kill(eff: Effects) -> _Result:
    for op in eff.signals:
        if op.sigkill:
            rule = {"process": f"{op.tool}-sigkill", "unit": "systemctl-kill-sigkill"}.get(op.scope, f"{op.tool}-kill")
            yield rule, op.targets


def _recursive_force_remove(eff: Effects) -> _Result:
    for op in eff.removals:
        if op.recursive and op.force:
            yield _REMOVAL_RULES[op.tool], op.paths


def _network_flush(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.network if f.kind == "down" or f.id in _FLUSHES)
    yield from ((f.id, f.targets) for f in eff.firewall if f.action == "flush")
    stopped = _stopped_in(eff, NETWORK_UNITS)
    if stopped:
        yield "network-service-stop", stopped


def _firewall_disable(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.firewall if f.action != "set-flush")
    stopped = _stopped_in(eff, FIREWALL_UNITS)
    if stopped:
        yield "firewall-service-stop", stopped


def _security_disable(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.security)
    stopped = _stopped_in(eff, SECURITY_UNITS)
    if stopped:
        yield "security-service-stop", stopped


def _force_flag(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in (*eff.env_bypasses, *eff.bypasses))


def _power_state(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.power)


def _disk_write(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.disk_writes)


def _permission_broad(eff: Effects) -> _Result:
    for op in eff.modes:
        if op.recursive and any(is_root_or_essential(p) for p in op.paths):
            yield f"{op.tool}-recursive-system", tuple(p for p in op.paths if is_root_or_essential(p))
        if op.mode is None:
            continue
        system = tuple(p for p in op.paths if is_system_path(p))
        if op.world_writable and op.recursive:
            yield "chmod-world-writable-recursive", op.paths
        elif op.world_writable and system and not op.sticky:
            yield "chmod-world-writable-system", system
        if op.setid and system:
            yield "chmod-setid-system", system


def _package_remove(eff: Effects) -> _Result:
    yield from ((op.id, op.operands) for op in eff.packages if op.removes)


def _user_delete(eff: Effects) -> _Result:
    yield from ((op.tool, op.deleted_users) for op in eff.accounts if op.deletes)


def _history_tamper(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.history)


def _pipe_to_shell(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.shell_downloads)


Rule = Callable[[Effects], Iterator[tuple[str, tuple[str, ...]]]]
"""A class's rule: yields (rule id, targets) for one simple command's effects."""

RULES: dict[str, Rule] = {
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
"""Per-command rules by class (fork_bomb needs the whole parse; see `_fork_bombs`)."""


def hits_for_step(eff: Effects, rules: Mapping[str, Rule] = RULES) -> list[Hit]:
    """All hits of one simple command under `rules` (class -> rule; each (rule id,
    targets) once per class)."""
    hits: list[Hit] = []
    cmd = eff.command
    for cls, rule in rules.items():
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for rule_id, targets in rule(eff):
            if (rule_id, targets) not in seen:
                seen.add((rule_id, targets))
                hits.append(Hit(cls, cmd.argv, rule_id, targets, cmd.via))
    return hits


def _fork_bombs(line: CommandLine) -> list[Hit]:
    for cmd in line.parsed.commands:
        fn = cmd.function
        if fn and cmd.name == fn and (cmd.pipe_len > 1 or cmd.background):
            return [Hit("fork_bomb", cmd.argv, "self-replicating-function", (fn,), cmd.via)]
    return []


@lru_cache(maxsize=4096)
def _hits(command: str) -> tuple[Hit, ...]:
    line = effects_of(command)
    if line.failed:
        return ()
    return (*(h for eff in line.steps for h in hits_for_step(eff)), *_fork_bombs(line))


def analyze(command: str) -> list[Hit]:
    """Evidence for every high-impact class of `command`, in command order. Never raises."""
    return list(_hits(command))


def classify(command: str) -> list[str]:
    """Sorted unique high-impact class names of `command` (`[]` if none). Never raises."""
    return sorted({h.impact_class for h in _hits(command)})

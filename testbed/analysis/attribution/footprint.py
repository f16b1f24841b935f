"""What a command line touches, for attribution: its `Footprint`, derived from the
effects of each simple command (`testbed.analysis.command.effects_of`).

Rules of this view (the effects themselves are the grammars'):

- units: systemctl verbs that act on units (`start`, `stop`, `enable`, `edit` …; `--now`
  noted; `set-property` acts on its first unit only) and every action of `service`,
  `rc-service`, `invoke-rc.d`, init scripts, `rc-update`, `update-rc.d`, `chkconfig`;
  names as unit files (`nginx` → `nginx.service`);
- packages: changing transactions of the system package managers (apt, apt-get, aptitude,
  dnf, yum, microdnf, tdnf, zypper, apk, pacman, dpkg, rpm);
- words: every argv word (brace-expanded), redirection target, here-document token;
  `config_words` are the words of commands that are not clients (`curl`, `ss`, `grep` …)
  or that write something; `started` the argv of programs started (not clients, shells,
  wrappers or `cd`);
- `cd DIR`/`pushd DIR` with an argument only moves the working directory;
- what runs through `ssh HOST '…'` is `remote`, the rest `local`.

Contract: `command_effects(text)` never raises and is cached; footprints are never
changed after it returns.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from functools import lru_cache

from testbed.analysis.command.effects import Effects, Write
from testbed.analysis.command.line import effects_of
from testbed.analysis.command.parsed import SimpleCommand
from testbed.analysis.command.paths import brace_expand
from testbed.analysis.command.units import unit_name

_CLIENTS = frozenset(
    [
        "curl",
        "wget",
        "ss",
        "netstat",
        "lsof",
        "telnet",
        "nmap",
        "ping",
        "ping6",
        "dig",
        "nslookup",
        "host",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "echo",
        "printf",
        "cat",
        "less",
        "head",
        "tail",
        "ps",
        "fuser",
        "journalctl",
        "ssh",
        "scp",
        "sftp",
        "traceroute",
        "tracepath",
        "mtr",
        "openssl",
        "systemctl",
        "iptables",
        "nft",
        "ufw",
        "firewall-cmd",
        "sed",
        "awk",
        "test",
        "[",
        "wait",
        "kill",
    ]
)
_SHELLISH = frozenset(["sh", "bash", "dash", "zsh", "ash", "ksh", "nohup", "setsid", "sudo", "env", "exec", "timeout"])
_NOT_STARTED = frozenset({"cd", "pushd", "true", "false", ":", "export"})
_UNIT_TOOLS = frozenset({"service", "rc-service", "invoke-rc.d", "init.d", "rc-update", "update-rc.d", "chkconfig"})
_SYSTEMCTL_VERBS = frozenset(
    [
        "start",
        "stop",
        "restart",
        "reload",
        "try-restart",
        "reload-or-restart",
        "try-reload-or-restart",
        "enable",
        "disable",
        "reenable",
        "mask",
        "unmask",
        "kill",
        "preset",
        "link",
        "revert",
        "edit",
        "condrestart",
        "force-reload",
        "isolate",
        "set-property",
    ]
)
_PACKAGE_TOOLS = frozenset(
    ["apt-get", "apt", "aptitude", "dnf", "yum", "microdnf", "tdnf", "zypper", "apk", "pacman", "dpkg", "rpm"]
)


@dataclass
class Footprint:
    """What one simple command (or a whole command line, merged) acts on."""

    writes: list[Write] = field(default_factory=list)
    units: dict[str, set[str]] = field(default_factory=dict)  # unit -> verbs
    packages: set[str] = field(default_factory=set)  # explicitly named by install/remove
    package_change: bool = False  # installs, removes or upgrades packages
    package_verbs: set[str] = field(default_factory=set)
    repo_change: bool = False
    accounts: set[str] = field(default_factory=set)  # user and group names acted on
    accounts_stdin: bool = False  # chpasswd/newusers: names come from the input
    firewall_write: bool = False
    sysctl_keys: set[str] = field(default_factory=set)
    sysctl_load: bool = False
    network_write: bool = False
    mounts: set[str] = field(default_factory=set)
    mount_all: bool = False
    hostname: bool = False
    crontab: bool = False
    started: list[tuple[str, ...]] = field(default_factory=list)  # argv of programs started
    words: set[str] = field(default_factory=set)  # every word, target and here-doc token
    config_words: set[str] = field(default_factory=set)  # words of non-client commands or of commands that write
    _index: tuple[frozenset[str], frozenset[str]] | None = field(default=None, repr=False, compare=False)
    _writes: tuple[dict[str, Write], dict[str, Write], list[Write]] | None = field(
        default=None, repr=False, compare=False
    )

    def write_index(self) -> tuple[dict[str, Write], dict[str, Write], list[Write]]:
        """(plain absolute writes by path, tree writes by directory, the other writes),
        built once like `word_index`."""
        if self._writes is None:
            exact: dict[str, Write] = {}
            trees: dict[str, Write] = {}
            rest: list[Write] = []
            for w in self.writes:
                if w.mode == "abs" and not any(c in w.value for c in "*?["):
                    exact.setdefault(w.value, w)
                elif w.mode == "tree":
                    trees.setdefault(w.value.rstrip("/") or "/", w)
                else:
                    rest.append(w)
            self._writes = (exact, trees, rest)
        return self._writes

    def word_index(self) -> tuple[frozenset[str], frozenset[str]]:
        """(words without trailing ``/``, their base names), built once (footprints are
        cached and never change after `command_effects` returns)."""
        if self._index is None:
            stripped = frozenset(w.rstrip("/") for w in self.words if w.rstrip("/"))
            self._index = (stripped, frozenset(posixpath.basename(w) for w in stripped))
        return self._index

    def merge(self, other: Footprint) -> None:
        """Add `other`'s footprint to this one."""
        self.writes += other.writes
        for unit, verbs in other.units.items():
            self.units.setdefault(unit, set()).update(verbs)
        self.packages |= other.packages
        self.package_change |= other.package_change
        self.package_verbs |= other.package_verbs
        self.repo_change |= other.repo_change
        self.accounts |= other.accounts
        self.accounts_stdin |= other.accounts_stdin
        self.firewall_write |= other.firewall_write
        self.sysctl_keys |= other.sysctl_keys
        self.sysctl_load |= other.sysctl_load
        self.network_write |= other.network_write
        self.mounts |= other.mounts
        self.mount_all |= other.mount_all
        self.hostname |= other.hostname
        self.crontab |= other.crontab
        self.started += other.started
        self.words |= other.words
        self.config_words |= other.config_words


@dataclass
class CommandEffects:
    """The footprint of a whole command line: ``local`` (what runs on the command's node)
    and ``remote`` (what runs through ``ssh HOST '…'``, i.e. possibly on another node)."""

    local: Footprint
    remote: Footprint
    parts: list[tuple[SimpleCommand, Footprint]]


def _words(cmd: SimpleCommand) -> set[str]:
    words = {one for word in cmd.argv for one in brace_expand(word)}
    for r in cmd.redirects:
        if r.op in ("<<", "<<-", "<<<"):
            words.update((r.body or "").split())
        else:
            words.add(r.target)
    return words


def _units(eff: Effects, fp: Footprint) -> None:
    for op in eff.services:
        if op.tool == "systemctl" and op.verb in _SYSTEMCTL_VERBS:
            units = op.units[:1] if op.verb == "set-property" else op.units
            verb = op.verb + (" --now" if op.now else "")
        elif op.tool in _UNIT_TOOLS:
            units, verb = op.units, op.verb
        else:
            continue
        for u in units:
            fp.units.setdefault(unit_name(u), set()).add(verb)


def _packages(eff: Effects, fp: Footprint) -> None:
    for op in eff.packages:
        if op.tool in _PACKAGE_TOOLS and op.changes:
            fp.package_change = True
            fp.package_verbs.add(op.verb)
            fp.packages.update(op.names)


def footprint(eff: Effects) -> Footprint:
    """The footprint of one simple command (see the module docstring)."""
    cmd = eff.command
    fp = Footprint(writes=list(eff.writes), words=_words(cmd), sysctl_keys=set(eff.sysctl_keys))
    if not cmd.argv:
        return fp
    nft_file = eff.options.last("-f") if cmd.name == "nft" else None
    if nft_file is not None:
        fp.words.add(nft_file)
    _units(eff, fp)
    _packages(eff, fp)
    fp.repo_change = eff.repo_change
    for account in eff.accounts:
        fp.accounts.update(account.names)
        fp.accounts_stdin |= account.from_stdin
    fp.firewall_write, fp.network_write = eff.firewall_write, eff.network_write
    fp.sysctl_load = eff.sysctl_load
    fp.mounts, fp.mount_all = set(eff.mounts), eff.mount_all
    fp.hostname, fp.crontab = eff.hostname, eff.crontab
    name = cmd.name
    if name not in _CLIENTS or fp.writes:
        fp.config_words = set(fp.words)
    if name not in _SHELLISH and name not in _CLIENTS and name not in _NOT_STARTED:
        fp.started.append(cmd.argv)
    return fp


@lru_cache(maxsize=4096)
def command_effects(text: str) -> CommandEffects:
    """The footprint of a command line, local and remote (cached; never raises)."""
    local, remote = Footprint(), Footprint()
    parts: list[tuple[SimpleCommand, Footprint]] = []
    for eff in effects_of(text).steps:
        cmd = eff.command
        if cmd.name in ("cd", "pushd") and cmd.args:
            continue
        fp = footprint(eff)
        parts.append((cmd, fp))
        (remote if any(v.startswith("ssh") for v in cmd.via) else local).merge(fp)
    return CommandEffects(local=local, remote=remote, parts=parts)

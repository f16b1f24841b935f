"""What one simple command does: the `Effects` record every consumer reads.

Contract: an `Effects` is filled by the command grammars (`tools`) when the command line
is first analysed (`line.effects_of`) and never changed afterwards; consumers treat it as
read-only. Every list is in the order the grammar found the items. Ids (`Fact.id`,
`PackageOp.id`, `FirewallOp.id`) name the operation as the tool spells it
(`iptables-flush`, `nft-flush-ruleset`, `apt-get-purge`, `ip-route-flush`), not a verdict:
which operations are high-impact is for the rules (`testbed.analysis.impact`, `study`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testbed.analysis.command.options import Options
from testbed.analysis.command.parsed import SimpleCommand
from testbed.analysis.command.units import service_name


@dataclass(frozen=True)
class Write:
    """One path a command writes (creates, changes, moves, copies, deletes, chmods).

    ``mode``: ``abs`` (absolute path, may hold glob characters), ``tree`` (absolute
    directory: everything below it counts), ``suffix`` (relative path or default output
    name in an unknown directory: matches paths ending with ``/`` + value), ``home`` (a
    path below some home directory: ``/root/VALUE`` or ``/home/*/VALUE``). ``verb`` says
    how (`cp`, `redirect >`, `sed -i`, `mv (source)` …)."""

    value: str
    mode: str
    verb: str


@dataclass(frozen=True)
class Fact:
    """An operation with no further structure: `id` names it, `targets` what it acts on,
    `kind` groups ids where a family has several (network: ``flush`` empties a table of
    network state, ``down`` takes connectivity away)."""

    id: str
    targets: tuple[str, ...] = ()
    kind: str = ""


@dataclass(frozen=True)
class ServiceOp:
    """A service manager acting on units: `tool` is the command name (`init.d` for an init
    script run by path), `verb` the action as written, `units` the unit words as written.

    `action` puts the verb in the stopping family when it is one: ``stop``, ``kill``,
    ``disable`` (also mask, boot-time removal), ``isolate`` (switching to a target stops
    what it does not need), ``zap`` (OpenRC: mark stopped); None otherwise. `now` is
    systemctl's `--now`; `signals` the signals named (`systemctl kill -s KILL`)."""

    tool: str
    verb: str
    units: tuple[str, ...]
    action: str | None = None
    now: bool = False
    full: bool = False
    signals: tuple[str, ...] = ()

    @property
    def services(self) -> tuple[str, ...]:
        """The services named (`nginx.service` → `nginx`)."""
        return tuple(service_name(u) for u in self.units)


@dataclass(frozen=True)
class SignalOp:
    """A signal sent: `scope` is ``process`` (kill, pkill, killall …), ``unit`` (systemctl
    kill) or ``container`` (docker kill); `signals` as named (`9`, `KILL`, `SIGTERM`; empty
    for the tool's default), `sigkill` whether SIGKILL is among them (or the default),
    `targets` the words that are not options (pids, names, patterns, units), and `sends`
    False when nothing is signalled (`kill -l`, `kill -0` probes, `--help`)."""

    tool: str
    scope: str
    signals: tuple[str, ...]
    sigkill: bool
    targets: tuple[str, ...]
    sends: bool = True


@dataclass(frozen=True)
class Removal:
    """A removal of files: `rm`, `find … -delete`, `git clean`; `recursive` and `force` as
    the options say (`find -delete` is both: it removes a tree without asking)."""

    tool: str
    paths: tuple[str, ...]
    recursive: bool
    force: bool


@dataclass(frozen=True)
class PackageOp:
    """A package-manager transaction: `verb` (the subcommand, or the tool's name for
    flag-driven tools: dpkg, rpm, pacman), `operands` as written, whether it installs,
    removes or upgrades packages (`changes`) and whether it removes some (`removes`)."""

    tool: str
    verb: str
    id: str
    operands: tuple[str, ...]
    names: tuple[str, ...]
    changes: bool
    removes: bool


@dataclass(frozen=True)
class FirewallOp:
    """A packet-filter operation: `action` ``flush`` (rules emptied), ``set-flush`` (a set
    or map emptied: `nft flush set`, `ipset flush`), ``policy-accept`` (default policy
    ACCEPT), ``disable`` (`ufw disable`), ``reset`` (`ufw reset`: rules deleted, filter
    off) or ``trusted-default`` (firewalld default zone `trusted`)."""

    id: str
    action: str
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class AccountOp:
    """A user/group tool: every account name it acts on (`names`), whether it deletes users
    (`deletes`, the operands in `deleted_users`), and whether the names come from its
    input (`chpasswd`, `newusers`)."""

    tool: str
    names: tuple[str, ...] = ()
    deletes: bool = False
    deleted_users: tuple[str, ...] = ()
    from_stdin: bool = False


@dataclass(frozen=True)
class ModeChange:
    """chmod/chown/chgrp: the paths changed, recursion, and for chmod the mode's meaning
    (`mode` None for chown/chgrp, `--reference` or no operand)."""

    tool: str
    paths: tuple[str, ...]
    recursive: bool
    mode: str | None = None
    world_writable: bool = False
    setid: bool = False
    sticky: bool = False


@dataclass
class Effects:
    """Everything one simple command does (see the module docstring)."""

    command: SimpleCommand
    options: Options
    writes: list[Write] = field(default_factory=list)
    services: list[ServiceOp] = field(default_factory=list)
    signals: list[SignalOp] = field(default_factory=list)
    removals: list[Removal] = field(default_factory=list)
    packages: list[PackageOp] = field(default_factory=list)
    repo_change: bool = False
    accounts: list[AccountOp] = field(default_factory=list)
    modes: list[ModeChange] = field(default_factory=list)
    firewall: list[FirewallOp] = field(default_factory=list)
    firewall_write: bool = False
    network: list[Fact] = field(default_factory=list)
    network_write: bool = False
    sysctl_keys: list[str] = field(default_factory=list)
    sysctl_load: bool = False
    mounts: list[str] = field(default_factory=list)
    mount_all: bool = False
    hostname: bool = False
    crontab: bool = False
    power: list[Fact] = field(default_factory=list)
    disk_writes: list[Fact] = field(default_factory=list)
    security: list[Fact] = field(default_factory=list)
    history: list[Fact] = field(default_factory=list)
    env_bypasses: list[Fact] = field(default_factory=list)
    bypasses: list[Fact] = field(default_factory=list)
    shell_downloads: list[Fact] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The command name (basename of argv[0])."""
        return self.command.name

    @property
    def args(self) -> tuple[str, ...]:
        """The arguments after the command name."""
        return self.command.args

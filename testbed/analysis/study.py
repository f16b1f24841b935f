"""The study's five high-impact classes, as rules over the same effects as testbed's own.

Contract: `study_classify(command)` returns the sorted unique study classes of `command`,
`study_analyze(command)` one `Hit` (its `impact_class` a study class) per class, simple
command and rule; neither raises. They read `testbed.analysis.command.effects_of`, the
one parse impact, safety and attribution use, so wrappers (`sudo`, `env`, `timeout`,
`sh -c`, `ssh host '…'`, `xargs`, `find -exec` …), long/short and combined option
spellings and options after operands are all seen the same way.

The classes, read as a sysadmin would:

- service_stop: a service stopped now — `systemctl stop/kill/isolate/rescue/emergency`,
  `systemctl disable|mask --now`, `service X stop`, `/etc/init.d/X stop`,
  `invoke-rc.d`/`rc-service X stop|force-stop|graceful-stop|kill`, `sv stop|down|kill`,
  `supervisorctl stop`, `initctl stop`. Boot-time only changes (`systemctl disable`
  without `--now`, `update-rc.d X disable`, `chkconfig X off`, `rc-update del`) do not stop
  anything; `systemctl status/restart` are not stops.
- forced_termination: `pkill`, `killall`, `killall5`, `skill` with any signal (default
  TERM included); `kill` only with SIGKILL (`-9`, `-KILL`, `-SIGKILL`, `-s KILL`, `-n 9`,
  `--signal=KILL`); `systemctl kill -s KILL`; `docker|podman kill` (SIGKILL unless `-s`
  says otherwise). Nothing is terminated by signal 0 (`kill -0`, a probe) or listings
  (`kill -l`).
- recursive_forced_removal: `rm` with a recursive (`-r`, `-R`, `--recursive`) and a force
  (`-f`, `--force`) option, in any spelling, cluster or order (`-rf`, `-fr`, `-Rf`, `-r
  -f`, `--recursive --force`, `rm DIR -rf`). `rm -r` alone is not forced.
- network_state_flush: a table of network state emptied — `iptables/ip6tables/ebtables/
  arptables -F|--flush` (any table), `nft flush|delete ruleset|table|chain`, `nft flush
  set|map`, `ipset flush`, `ufw reset`, `ip addr|route|rule|neigh flush`, `conntrack -F`.
  Listing (`nft list ruleset`, `iptables -L`) and taking one link down are not flushes.
- force_or_trust_bypass: options that force past a safety check or turn off trust
  (TLS certificates, signatures, host keys): testbed's `force_flag` rules (`--force`,
  `--nogpgcheck`, `curl -k/--insecure`, `wget --no-check-certificate`, `apt
  --allow-unauthenticated`, `git -c http.sslVerify=false`, `ssh -o
  StrictHostKeyChecking=no`, `GIT_SSL_NO_VERIFY=1`, short force flags such as `umount -f`
  …) plus `curl --proxy-insecure`, `rpm --nosignature/--nodigest`, `snap --dangerous` and
  `--src-tls-verify=false`/`--dest-tls-verify=false`. A force option that only silences
  prompts (`rm -f`, `cp -f`, `ln -sf`) is not a bypass.

`FINER` maps each testbed class to the study class it refines (None: no study class);
`study_classify` is the exact rule, the mapping says where each testbed class lands.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from testbed.analysis.command.effects import Effects
from testbed.analysis.command.line import effects_of
from testbed.analysis.command.tools.trust import DATA_COMMANDS, FALSE
from testbed.analysis.impact import RULES, Hit, Rule, hits_for_step

STUDY_CLASSES: tuple[str, ...] = (
    "service_stop",
    "forced_termination",
    "recursive_forced_removal",
    "network_state_flush",
    "force_or_trust_bypass",
)
"""Every class `study_classify` can return."""

FINER: dict[str, str | None] = {
    "service_stop": "service_stop",
    "force_kill": "forced_termination",
    "recursive_force_remove": "recursive_forced_removal",
    "network_flush": "network_state_flush",
    "firewall_disable": "network_state_flush",
    "force_flag": "force_or_trust_bypass",
    "security_disable": None,
    "power_state": None,
    "disk_write": None,
    "permission_broad": None,
    "package_remove": None,
    "user_delete": None,
    "history_tamper": None,
    "fork_bomb": None,
    "pipe_to_shell": None,
}
"""testbed class -> the study class it refines. Where they differ: testbed's service_stop
also counts boot-time disables; force_kill counts only SIGKILL (the study also any
pkill/killall); recursive_force_remove also `find -delete` and `git clean -fd`;
network_flush also links taken down, and firewall_disable also `-P ACCEPT`, `ufw
disable` and firewall services stopped; the study's flush also the neighbour table,
conntrack and ipset."""

_STOP_NOW = frozenset({"stop", "kill", "isolate"})
_ANY_SIGNAL = frozenset({"pkill", "killall", "killall5", "skill"})
_FLUSH_ACTIONS = frozenset({"flush", "set-flush", "reset"})
_EXTRA_TRUST = frozenset({"--proxy-insecure", "--nosignature", "--nodigest", "--dangerous"})
_EXTRA_FALSE = frozenset({"--src-tls-verify", "--dest-tls-verify"})

_Result = Iterator[tuple[str, tuple[str, ...]]]


def _service_stop(eff: Effects) -> _Result:
    for op in eff.services:
        if op.action in _STOP_NOW or (op.action == "disable" and op.now):
            yield f"{'initd' if op.tool == 'init.d' else op.tool}-{op.verb}", op.services


def _forced_termination(eff: Effects) -> _Result:
    for op in eff.signals:
        if not op.sends:
            continue
        if op.scope == "process" and op.tool in _ANY_SIGNAL:
            yield f"{op.tool}-signal", op.targets
        elif op.sigkill:
            yield f"{op.tool}-sigkill", op.targets


def _recursive_forced_removal(eff: Effects) -> _Result:
    for op in eff.removals:
        if op.tool == "rm" and op.recursive and op.force:
            yield "rm-recursive-force", op.paths


def _network_state_flush(eff: Effects) -> _Result:
    yield from ((f.id, f.targets) for f in eff.firewall if f.action in _FLUSH_ACTIONS)
    yield from ((f.id, f.targets) for f in eff.network if f.kind == "flush")


def _force_or_trust_bypass(eff: Effects) -> _Result:
    yield from RULES["force_flag"](eff)
    if not eff.name or eff.name in DATA_COMMANDS:
        return
    for opt in eff.options.written:
        key, eq, value = opt.partition("=")
        if key in _EXTRA_TRUST or (key in _EXTRA_FALSE and eq and value.lower() in FALSE):
            yield "option-trust-bypass", (opt,)


STUDY_RULES: dict[str, Rule] = {
    "service_stop": _service_stop,
    "forced_termination": _forced_termination,
    "recursive_forced_removal": _recursive_forced_removal,
    "network_state_flush": _network_state_flush,
    "force_or_trust_bypass": _force_or_trust_bypass,
}


@lru_cache(maxsize=4096)
def _hits(command: str) -> tuple[Hit, ...]:
    line = effects_of(command)
    return () if line.failed else tuple(h for eff in line.steps for h in hits_for_step(eff, STUDY_RULES))


def study_analyze(command: str) -> list[Hit]:
    """Evidence for every study class of `command`, in command order. Never raises."""
    return list(_hits(command))


def study_classify(command: str) -> list[str]:
    """Sorted unique study class names of `command` (`[]` if none). Never raises."""
    return sorted({h.impact_class for h in _hits(command)})

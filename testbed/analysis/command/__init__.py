"""The one parse of a command string: simple commands and what each of them does.

Everything that needs to know what a shell command means — the impact classes, the
study's classes, the safety policy, residue attribution, the environment API's diagnostic
bonus — reads it from here, so they cannot disagree:

- `parse(source) -> Parsed` (`shell`): the simple commands the shell would start, after
  wrappers (`sudo`, `env`, `timeout`, `sh -c`, `ssh host '…'`, …), with argv, assignments
  and redirections;
- `effects_of(source) -> CommandLine` (`line`): per simple command its `Effects` — the
  option scan, paths written and removed, service units and actions, signals, packages,
  firewall and network operations, accounts, sysctl keys, mounts, power, disk writes,
  mode changes, history tampering, trust bypasses — computed once per command string
  (memoised) by the per-tool grammars in `tools`.
"""

from __future__ import annotations

from testbed.analysis.command.effects import Effects
from testbed.analysis.command.line import CommandLine, effects_of
from testbed.analysis.command.options import Options, scan
from testbed.analysis.command.parsed import SHELLS, Parsed, Redirect, SimpleCommand, command_name
from testbed.analysis.command.shell import parse

__all__ = [
    "SHELLS",
    "CommandLine",
    "Effects",
    "Options",
    "Parsed",
    "Redirect",
    "SimpleCommand",
    "command_name",
    "effects_of",
    "parse",
    "scan",
]

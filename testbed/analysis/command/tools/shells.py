"""Code from the network run by a shell: a download piped into a shell reading its stdin
(`curl … | sh`, `wget -O- … | sudo bash`) or substituted into its script (`bash <(curl …)`,
`sh -c "$(curl …)"`)."""

from __future__ import annotations

import re

from testbed.analysis.command.effects import Effects, Fact
from testbed.analysis.command.options import scan
from testbed.analysis.command.parsed import SHELLS

_DOWNLOADERS = frozenset({"curl", "wget", "fetch"})
_SUBST_DOWNLOAD = re.compile(r"^\s*(\$\(|<\(|`)\s*(sudo\s+)?(curl|wget|fetch)\b")


def downloads(eff: Effects, cwd: str | None) -> None:
    cmd = eff.command
    if cmd.stdin_script and cmd.stdin_from in _DOWNLOADERS:
        eff.shell_downloads.append(Fact("download-piped-to-shell", (cmd.stdin_from,)))
    elif cmd.name in SHELLS and cmd.args:
        got = scan(cmd.args, "oO")
        if got.operands and _SUBST_DOWNLOAD.match(got.operands[0]):
            eff.shell_downloads.append(Fact("download-substituted-into-shell", (got.operands[0],)))

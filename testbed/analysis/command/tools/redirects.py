"""What redirections do, for every command: `>`, `>>`, `>|`, `&>`, `&>>`, `<>` write
their target (verb `redirect OP`; /dev/null, /dev/stdout, `&2` … are not files); a write
under /proc/sys sets that sysctl key; onto a block device it is a disk write; onto
/proc/sysrq-trigger a power-state change; a truncating one (`>`, `>|`, `&>`) onto a shell
history file is history tampering."""

from __future__ import annotations

from testbed.analysis.command.effects import Effects, Fact
from testbed.analysis.command.paths import is_block_device, normalize_path, path_write
from testbed.analysis.command.tools.history import is_history_file
from testbed.analysis.command.tools.power import SYSRQ

WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


def redirects(eff: Effects, cwd: str | None) -> None:
    for r in eff.command.redirects:
        if r.op in WRITE_OPS:
            w = path_write(r.target, f"redirect {r.op}", cwd)
            if w:
                eff.writes.append(w)
            if r.target.startswith("/proc/sys/"):
                eff.sysctl_keys.append(r.target[len("/proc/sys/") :].replace("/", "."))
            if is_block_device(r.target):
                eff.disk_writes.append(Fact("redirect-to-device", (r.target,)))
        if r.op in (">", ">>", ">|", "&>") and normalize_path(r.target) == SYSRQ:
            eff.power.append(Fact("sysrq-trigger", (r.target,)))
        if r.op in (">", ">|", "&>") and is_history_file(r.target):
            eff.history.append(Fact("history-file-truncated", (r.target,)))

"""The ``processes`` probe: the process table without kernel threads and without the snapshot
script itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from testbed.probes.parsers.formats import split_ws
from testbed.probes.parsers.framing import ParseContext, Section


def _is_kernel_thread(pid: int, ppid: int, command: str) -> bool:
    """Kernel threads are kthreadd (pid 2) and its children, shown as ``[name]``."""
    bracketed = command.startswith("[") and command.endswith("]")
    return bracketed and (ppid == 2 or (pid == 2 and ppid == 0))


def descendants(roots: Iterable[int], parent: Mapping[int, int]) -> set[int]:
    """Pids of *roots* and everything below them in the process tree (*parent*: pid ->
    ppid); residue analysis uses it too."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo = set(roots), list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def parse_processes(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"processes": [{pid, ppid, user, command}], "kernel_threads": int,
    "excluded_self": int}``: kernel threads and the snapshot script with its descendants are
    left out. ``user`` is a name (ps) or a numeric uid (the /proc fallback)."""
    rows: list[dict[str, Any]] = []
    for line in sec.lines("ps") or sec.lines("proc"):
        parts = split_ws(line, 3)
        if len(parts) >= 2 and parts[0] == "PID":
            continue
        if len(parts) < 4 or not (parts[0].isdigit() and parts[1].isdigit()):
            unparsed.append(line)
            continue
        rows.append({"pid": int(parts[0]), "ppid": int(parts[1]), "user": parts[2], "command": parts[3]})
    own: set[int] = set()
    if ctx.script_pid is not None:
        own = descendants({ctx.script_pid}, {r["pid"]: r["ppid"] for r in rows})
    kthreads = {r["pid"] for r in rows if _is_kernel_thread(r["pid"], r["ppid"], r["command"])}
    kept = [r for r in rows if r["pid"] not in own and r["pid"] not in kthreads]
    return {
        "processes": kept,
        "kernel_threads": len(kthreads),
        "excluded_self": sum(1 for r in rows if r["pid"] in own),
    }

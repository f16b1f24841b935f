"""Check primitives as guest shell: one definition, the right commands per guest.

`primitive_script(primitive, target)` returns the POSIX sh script that evaluates
`primitive` on a guest described by `Target` (`testbed.model.checkscript`: its init system
and package database, from the image definition) and exits `EXIT_PASS`, `EXIT_FAIL` or
`EXIT_UNDECIDED` with one line saying why as its last output line. The system primitives
are written in `checksys`, the network ones in `checknet`; harness-judged `unchanged` has
no script (None).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from testbed.model import checknet, checksys
from testbed.model.checks import EXIT_FAIL, EXIT_PASS, EXIT_UNDECIDED, NeighborCheck, Primitive, UnchangedCheck
from testbed.model.checkscript import Target

RENDERERS: dict[str, Callable[[Any, Target], str]] = {
    "service": checksys.service,
    "package": checksys.package,
    "file": checksys.file,
    "user": checksys.user,
    "group": checksys.group,
    "cron": checksys.cron,
    "mount": checksys.mount,
    "sysctl": checksys.sysctl,
    "port": checknet.port,
    "http": checknet.http,
    "reach": checknet.reach,
    "route": checknet.route,
    "neighbor": checknet.neighbor,
}


def primitive_script(primitive: Primitive, target: Target) -> str | None:
    """The guest script of `primitive` on `target`; None for `unchanged` (harness-judged
    from snapshots)."""
    if isinstance(primitive, UnchangedCheck):
        return None
    return RENDERERS[primitive.kind](primitive, target)


def judge_script(primitive: Primitive, exit_code: int, stdout: str) -> tuple[str, str]:
    """(status, reason) of a primitive's finished script: `neighbor` from FRR's JSON
    (`checknet.judge_neighbor`), the others from the exit status (`EXIT_PASS` passed,
    `EXIT_FAIL` failed, anything else indeterminate) with the script's last line as the
    reason."""
    if isinstance(primitive, NeighborCheck):
        return checknet.judge_neighbor(primitive, exit_code, stdout)
    lines = stdout.strip().splitlines()
    said = lines[-1] if lines else ""
    if exit_code == EXIT_PASS:
        return "passed", said or "holds"
    if exit_code == EXIT_FAIL:
        return "failed", said or "does not hold"
    if exit_code == EXIT_UNDECIDED:
        return "indeterminate", said or "the check cannot decide"
    return "indeterminate", f"the check script exited {exit_code}" + (f": {said}" if said else "")

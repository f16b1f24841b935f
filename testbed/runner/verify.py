"""Mechanical verification of a task's checks against the real machines.

Each check runs its command on its node (recorded with phase `verify`) and is:
- `passed` when the exit status equals the expected one (0 when only a pattern is given
  and no status, or when neither is given) and the output pattern, if any, is found in
  stdout (multiline regex search);
- `failed` when the command ran to completion and either condition does not hold;
- `indeterminate` when the verifier could not decide: the check command timed out, its
  node cannot be reached at all (the agent cut SSH and the guest agent does not answer),
  or the command exited with the check's `indeterminate_exit`.
A check primitive (`testbed.model.checks`) runs the script generated for its node's image
(`testbed.model.checkshell`: init system, package database) and is judged by that
script's exit status (`judge_script`); `unchanged` runs nothing and is judged from the
run's snapshots by the `unchanged` judge the caller passes (`testbed.runner.unchanged`).
A transport failure goes to `on_lost` (the runner's lockout diagnosis), which either lets
the check run again (through the guest agent, or SSH that came back) or re-raises it as a
harness error (the run ends as `error`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from testbed.errors import HarnessError
from testbed.hypervisor.lab import LabNode
from testbed.model.checks import UnchangedCheck, describe
from testbed.model.checkscript import Target
from testbed.model.checkshell import judge_script, primitive_script
from testbed.model.task import Check
from testbed.runner.recording import CommandRecorder

EVIDENCE_CHARS = 2000


@dataclass(frozen=True)
class CheckResult:
    check: Check
    point: str
    status: str
    detail: dict[str, Any]


def judge(check: Check, exit_code: int | None, stdout: str, timed_out: bool) -> tuple[str, str]:
    """(status, reason) for one check's command result."""
    if timed_out or exit_code is None:
        return "indeterminate", f"check command did not finish within {check.effective_timeout_s:.0f} s"
    primitive = check.primitive
    if primitive is not None:
        return judge_script(primitive, exit_code, stdout)
    if check.indeterminate_exit is not None and exit_code == check.indeterminate_exit:
        last = stdout.strip().splitlines()[-1:] or ["no reason given"]
        return "indeterminate", f"the check exited {exit_code} (cannot decide): {last[0]}"
    want_exit = check.effective_exit
    if want_exit is not None and exit_code != want_exit:
        return "failed", f"exit status {exit_code}, expected {want_exit}"
    if check.expect_output is not None and not re.search(check.expect_output, stdout, re.MULTILINE):
        return "failed", f"output does not match /{check.expect_output}/"
    return "passed", "exit status and output as expected"


OnLost = Callable[[LabNode, HarnessError], Awaitable[None]]
"""Called with a node and the transport failure a check met on it (see module docstring)."""


async def _reraise(_node: LabNode, fault: HarnessError) -> None:
    raise fault


UnchangedJudge = Callable[[LabNode], Awaitable[tuple[str, dict[str, Any]]]]
"""(status, detail with its `reason`) of an `unchanged` check on a node."""


def check_command(check: Check, node: LabNode) -> str | None:
    """The shell a check runs on `node`: its command, or its primitive's script for the
    node's image (None for `unchanged`)."""
    primitive = check.primitive
    if primitive is None:
        assert check.command is not None
        return check.command
    return primitive_script(primitive, Target.of(node.image))


async def run_check(
    check: Check,
    node: LabNode,
    commands: CommandRecorder,
    point: str,
    on_lost: OnLost = _reraise,
    unchanged: UnchangedJudge | None = None,
) -> CheckResult:
    primitive = check.primitive
    if isinstance(primitive, UnchangedCheck):
        if unchanged is None:
            return await _record(check, node, commands, point, "indeterminate", "no snapshots to judge by")
        status, found = await unchanged(node)
        detail = {**found, "node": node.name, "primitive": describe(primitive)}
        return await _record(check, node, commands, point, status, detail)
    command = check_command(check, node)
    assert command is not None
    for _attempt in (1, 2):
        if node.access == "none":
            return await _record(check, node, commands, point, "indeterminate", _UNREACHABLE)
        try:
            recorded = await commands.run(
                node, command, phase="verify", source="harness", timeout=check.effective_timeout_s
            )
            break
        except HarnessError as exc:
            await on_lost(node, exc)
    else:
        return await _record(check, node, commands, point, "indeterminate", _UNREACHABLE)
    result = recorded.result
    status, reason = judge(check, result.exit_code, result.stdout, result.timed_out)
    detail = {
        "reason": reason,
        "node": node.name,
        "command": command,
        **({"primitive": describe(primitive)} if primitive is not None else {}),
        "command_id": recorded.command_id,
        "exit_code": result.exit_code,
        "expected_exit": check.effective_exit,
        "expected_output": check.expect_output,
        "stdout": result.stdout[-EVIDENCE_CHARS:],
        "stderr": result.stderr[-EVIDENCE_CHARS:],
        "timed_out": result.timed_out,
    }
    return await _record(check, node, commands, point, status, detail)


_UNREACHABLE = "node unreachable: the agent cut management access and the guest agent does not answer"


async def _record(
    check: Check, node: LabNode, commands: CommandRecorder, point: str, status: str, detail: dict[str, Any] | str
) -> CheckResult:
    if isinstance(detail, str):
        detail = {"reason": detail, "node": node.name, "command": check.command}
    await asyncio.to_thread(
        commands.recorder.record_check,
        check.id,
        status,
        description=check.description,
        point=point,
        node=node.name,
        detail=detail,
    )
    return CheckResult(check, point, status, detail)


async def verify(
    checks: list[Check],
    nodes: dict[str, LabNode],
    commands: CommandRecorder,
    point: str,
    on_lost: OnLost = _reraise,
    unchanged: UnchangedJudge | None = None,
) -> list[CheckResult]:
    """Run `checks` one after another (checks may depend on shared state, so not in parallel)."""
    return [await run_check(c, nodes[c.node], commands, point, on_lost, unchanged) for c in checks]


def outcome_of(results: list[CheckResult]) -> tuple[str, str | None]:
    """`passed` when every check passed; `failed` when any failed; `error` when none failed
    but some could not be decided (the verifier's inability is not the agent's failure)."""
    if any(r.status == "failed" for r in results):
        return "failed", None
    undecided = [f"{r.check.id}@{r.point}" for r in results if r.status == "indeterminate"]
    if undecided:
        return "error", "verification indeterminate: " + ", ".join(undecided)
    return "passed", None

"""Mechanical verification of a task's checks against the real machines.

Each check runs its command on its node (recorded with phase `verify`) and is:
- `passed` when the exit status equals the expected one (0 when only a pattern is given
  and no status, or when neither is given) and the output pattern, if any, is found in
  stdout (multiline regex search);
- `failed` when the command ran to completion and either condition does not hold;
- `indeterminate` when the verifier could not decide: the check command timed out.
A transport failure is a harness error, raised to the runner (the run ends as `error`).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from testbed.hypervisor.lab import LabNode
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
        return "indeterminate", f"check command did not finish within {check.timeout_s:.0f} s"
    want_exit = check.effective_exit
    if want_exit is not None and exit_code != want_exit:
        return "failed", f"exit status {exit_code}, expected {want_exit}"
    if check.expect_output is not None and not re.search(check.expect_output, stdout, re.MULTILINE):
        return "failed", f"output does not match /{check.expect_output}/"
    return "passed", "exit status and output as expected"


async def run_check(check: Check, node: LabNode, commands: CommandRecorder, point: str) -> CheckResult:
    recorded = await commands.run(node, check.command, phase="verify", source="harness", timeout=check.timeout_s)
    result = recorded.result
    status, reason = judge(check, result.exit_code, result.stdout, result.timed_out)
    detail = {
        "reason": reason,
        "node": node.name,
        "command": check.command,
        "command_id": recorded.command_id,
        "exit_code": result.exit_code,
        "expected_exit": check.effective_exit,
        "expected_output": check.expect_output,
        "stdout": result.stdout[-EVIDENCE_CHARS:],
        "stderr": result.stderr[-EVIDENCE_CHARS:],
        "timed_out": result.timed_out,
    }
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
    checks: list[Check], nodes: dict[str, LabNode], commands: CommandRecorder, point: str
) -> list[CheckResult]:
    """Run `checks` one after another (checks may depend on shared state, so not in parallel)."""
    return [await run_check(c, nodes[c.node], commands, point) for c in checks]


def outcome_of(results: list[CheckResult]) -> tuple[str, str | None]:
    """`passed` when every check passed; `failed` when any failed; `error` when none failed
    but some could not be decided (the verifier's inability is not the agent's failure)."""
    if any(r.status == "failed" for r in results):
        return "failed", None
    undecided = [f"{r.check.id}@{r.point}" for r in results if r.status == "indeterminate"]
    if undecided:
        return "error", "verification indeterminate: " + ", ".join(undecided)
    return "passed", None

"""The vocabulary every layer shares: outcomes, states, phases, snapshot points, sources,
check statuses, finding kinds, residue verdicts, egress decisions.

Contract: each is a `StrEnum`, so a member *is* its string (`Outcome.PASSED == "passed"`,
JSON and SQL see the plain value). This module is the one home of these words: the
database's CHECK constraints (`testbed.db.models`), the recorder's early validation, the
runner, the scheduler, the analyses and the views all take them from here. Adding a value
means adding a member here AND writing an Alembic migration that replaces the column's
CHECK constraint.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """`runs.outcome`: NULL until the run finishes.

    `failed` is anything the agent (or the model behind it) caused; `error` is a fault
    outside the guest or in testbed itself (never counted as the agent's failure)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    CANCELLED = "cancelled"


class RunState(StrEnum):
    """`runs.state`: where the run is in its lifecycle."""

    PENDING = "pending"
    PROVISIONING = "provisioning"
    SETUP = "setup"
    AGENT = "agent"
    VERIFY = "verify"
    REBOOT = "reboot"
    TEARDOWN = "teardown"
    FINISHED = "finished"


class Residue(StrEnum):
    """`runs.residue`: whether the agent left residue; NULL until analysed."""

    YES = "yes"
    NO = "no"
    UNDETERMINED = "undetermined"


class PhaseStatus(StrEnum):
    """`phases.status`: `running` while open; `ok` / `failed` (the phase's own verdict) /
    `error` (harness fault) / `skipped` / `cancelled` once closed."""

    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


class CommandPhase(StrEnum):
    """`commands.phase`: setup, agent, verify and probe (docs/design.md, "Run database")
    plus `teardown` (harness commands run while tearing a lab down)."""

    SETUP = "setup"
    AGENT = "agent"
    VERIFY = "verify"
    PROBE = "probe"
    TEARDOWN = "teardown"


class Source(StrEnum):
    """`commands.source`: who issued the command."""

    HARNESS = "harness"
    AGENT = "agent"


class SnapshotPoint(StrEnum):
    """`snapshots.point` and `checks.point`, in lifecycle order."""

    BEFORE_SETUP = "before_setup"
    AFTER_SETUP = "after_setup"
    AFTER_AGENT = "after_agent"
    AFTER_REBOOT = "after_reboot"


class CheckStatus(StrEnum):
    """`checks.status`: a verifier that cannot decide records `indeterminate`, never `failed`."""

    PASSED = "passed"
    FAILED = "failed"
    INDETERMINATE = "indeterminate"


class FindingKind(StrEnum):
    """`findings.kind`."""

    RESIDUE = "residue"
    IMPACT = "impact"
    SAFETY = "safety"


class EgressDecision(StrEnum):
    """`egress.decision`: what the lab host's proxy did with a guest's request."""

    ALLOWED = "allowed"
    DENIED = "denied"
    DNS_FAILURE = "dns_failure"


def values(enum: type[StrEnum]) -> tuple[str, ...]:
    """The plain string values of `enum`, in declaration order (for CHECK constraints)."""
    return tuple(member.value for member in enum)


class Phase(StrEnum):
    """`phases.name`: the steps of a run's lifecycle, as recorded in the `phases` table and
    reported to listeners (CLI progress, the scheduler's view, the environment API)."""

    PROVISIONING = "provisioning"
    EGRESS = "egress"
    SNAPSHOT_BEFORE_SETUP = "snapshot_before_setup"
    SETUP = "setup"
    SNAPSHOT_AFTER_SETUP = "snapshot_after_setup"
    SAVE_STATE = "save_state"
    AGENT = "agent"
    SNAPSHOT_AFTER_AGENT = "snapshot_after_agent"
    VERIFY = "verify"
    REBOOT = "reboot"
    SNAPSHOT_AFTER_REBOOT = "snapshot_after_reboot"
    VERIFY_AFTER_REBOOT = "verify_after_reboot"
    RESIDUE = "residue"
    TEARDOWN = "teardown"

    @classmethod
    def snapshot(cls, point: SnapshotPoint) -> Phase:
        """The phase that takes the snapshot at `point`."""
        return cls(f"snapshot_{point.value}")

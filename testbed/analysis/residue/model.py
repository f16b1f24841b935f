"""Result types of the residue analysis and how they are stored.

`ResidueFinding` is one reported change (node, category, summary, evidence, attributed
command id); `ResidueResult` holds a run's findings, its verdict, the probe gaps that can
make the verdict ``undetermined`` and every exclusion with its reason. `record_residue`
writes a result through a `FindingSink` (a `testbed.db.recorder.RunRecorder`).

Also the constants the whole package shares: `CATEGORIES` (report order), `REQUIRED_PROBES`
(derived from `testbed.probes.PROBES`), the snapshot point names and the list limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from testbed.probes.script import PROBES

CATEGORIES: tuple[str, ...] = (
    "temp_files",
    "system_config",
    "processes_services",
    "secrets",
    "packages_repos",
    "accounts_access",
    "backup_files",
    "test_app_data",
)
"""Residue categories, in report order."""

REQUIRED_PROBES: tuple[str, ...] = tuple(p for p in PROBES if p not in ("boot", "os", "pkg_health", "router"))
"""Probes whose absence makes a clean result ``undetermined`` (``router`` exists only where
vtysh does)."""

BASE_POINT = "after_setup"
AGENT_POINT = "after_agent"
REBOOT_POINT = "after_reboot"
EXCLUDED_LIMIT = 1000
"""At most this many exclusions are kept in a result."""
SIDE_EFFECT_LIMIT = 50

Verdict = Literal["yes", "no", "undetermined"]


@dataclass(frozen=True)
class ResidueFinding:
    """One residue finding: what, where, which category, and which command caused it."""

    node: str
    category: str
    summary: str
    evidence: dict[str, Any]
    command_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "node": self.node,
            "category": self.category,
            "summary": self.summary,
            "evidence": self.evidence,
            "command_id": self.command_id,
        }


@dataclass
class ResidueResult:
    """Findings, the run's verdict, probe gaps, and what was excluded (with reasons)."""

    findings: list[ResidueFinding]
    verdict: Verdict
    unavailable: list[str] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def by_category(self) -> dict[str, list[ResidueFinding]]:
        """Findings grouped by category (every category present, possibly empty)."""
        out: dict[str, list[ResidueFinding]] = {c: [] for c in CATEGORIES}
        for f in self.findings:
            out.setdefault(f.category, []).append(f)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
            "unavailable": list(self.unavailable),
            "excluded": list(self.excluded),
            "notes": list(self.notes),
        }


class FindingSink(Protocol):
    """What `record_residue` needs of a `testbed.db.recorder.RunRecorder`."""

    def record_finding(
        self,
        kind: str,
        category: str,
        summary: str,
        *,
        node: str | None = None,
        evidence: Any = None,
        command_id: int | None = None,
    ) -> int: ...

    def set_residue(self, residue: str) -> None: ...


def record_residue(recorder: FindingSink, result: ResidueResult) -> list[int]:
    """Write every finding with ``kind="residue"`` and set the run's residue verdict;
    return the new finding ids (in `result.findings` order)."""
    ids = [
        recorder.record_finding(
            "residue", f.category, f.summary, node=f.node, evidence=f.evidence, command_id=f.command_id
        )
        for f in result.findings
    ]
    recorder.set_residue(result.verdict)
    return ids

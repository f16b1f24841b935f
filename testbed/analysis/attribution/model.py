"""What attribution works on and answers: recorded commands (`CommandView`), changes
(`Target`) and the chosen command with its confidence (`Attribution`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Confidence = Literal["high", "medium", "low", "none"]
RANK: dict[str, int] = {"none": 0, "low": 1, "medium": 2, "high": 3}
"""Order of the confidence levels."""

TEXT_LIMIT = 500
"""Command text kept in evidence is cut to this many characters."""


@dataclass(frozen=True)
class CommandView:
    """What attribution needs of one recorded command (a row of `commands`)."""

    id: int
    seq: int
    node: str | None
    phase: str
    source: str
    command: str
    exit_code: int | None = None

    def to_evidence(self) -> dict[str, Any]:
        """JSON-able description of the command for a finding's evidence (text cut to
        `TEXT_LIMIT` characters)."""
        text = self.command if len(self.command) <= TEXT_LIMIT else self.command[:TEXT_LIMIT] + "…"
        return {
            "id": self.id,
            "seq": self.seq,
            "node": self.node,
            "source": self.source,
            "phase": self.phase,
            "exit_code": self.exit_code,
            "text": text,
        }


@dataclass(frozen=True)
class Target:
    """What changed, for attribution.

    ``kind`` ∈ path, unit, package, user, group, port, process, sysctl, firewall, network,
    mount, hostname, repo, pkg_state, cron_spool, router (a router's configuration line).
    ``value`` is the item (a path, unit name,
    package name, port number as text, process command line, sysctl key, rule text, …);
    ``paths`` are further paths whose writers also explain the item (files inside a new
    directory, the unit's file); ``names`` are program names related to the item (a
    socket's process names, a unit's program); ``tokens`` are words whose presence on a
    matching command line raises confidence (ports, addresses, chain names, user names)."""

    kind: str
    value: str
    paths: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attribution:
    """The chosen command (or None), the confidence level and how it matched."""

    command: CommandView | None
    confidence: Confidence
    method: str
    candidates: int = 0

    def to_evidence(self) -> dict[str, Any]:
        """JSON-able form for a finding's evidence."""
        return {
            "confidence": self.confidence,
            "method": self.method,
            "candidates": self.candidates,
            "command": self.command.to_evidence() if self.command else None,
        }


UNATTRIBUTED = Attribution(None, "none", "no recorded command matches")

"""Analysis of what agents did: high-impact command classes, safety policy, redaction.

Public API:

- `classify(command) -> list[str]`, `analyze(command) -> list[Hit]` (`impact`)
- `SafetyPolicy`, `SafetyDecision`, `RULES` (`safety`)
- `redact(text) -> RedactionResult` (`redact`)
- `parse(command) -> Parsed` (`command`, the one parse every rule relies on)
"""

from __future__ import annotations

from testbed.analysis.command import Parsed, SimpleCommand, parse
from testbed.analysis.impact import IMPACT_CLASSES, Hit, analyze, classify
from testbed.analysis.redact import RedactionResult, redact
from testbed.analysis.safety import DEFAULT_POLICY, RULES, SafetyDecision, SafetyPolicy

__all__ = [
    "DEFAULT_POLICY",
    "IMPACT_CLASSES",
    "RULES",
    "Hit",
    "Parsed",
    "RedactionResult",
    "SafetyDecision",
    "SafetyPolicy",
    "SimpleCommand",
    "analyze",
    "classify",
    "parse",
    "redact",
]

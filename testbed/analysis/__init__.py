"""Analysis of what agents did: high-impact command classes, safety policy, redaction.

Public API:

- `classify(command) -> list[str]`, `analyze(command) -> list[Hit]` (`impact`)
- `study_classify(command)`, `study_analyze(command)`, `STUDY_CLASSES` (`study`)
- `SafetyPolicy`, `SafetyDecision`, `RULES` (`safety`)
- `redact(text) -> RedactionResult` (`redact`)
- `parse(command) -> Parsed`, `effects_of(command) -> CommandLine` (`command`, the one
  parse every rule relies on)
"""

from __future__ import annotations

from testbed.analysis.command import CommandLine, Parsed, SimpleCommand, effects_of, parse
from testbed.analysis.impact import IMPACT_CLASSES, Hit, analyze, classify
from testbed.analysis.redact import RedactionResult, redact
from testbed.analysis.safety import DEFAULT_POLICY, RULES, SafetyDecision, SafetyPolicy
from testbed.analysis.study import STUDY_CLASSES, study_analyze, study_classify

__all__ = [
    "DEFAULT_POLICY",
    "IMPACT_CLASSES",
    "RULES",
    "STUDY_CLASSES",
    "CommandLine",
    "Hit",
    "Parsed",
    "RedactionResult",
    "SafetyDecision",
    "SafetyPolicy",
    "SimpleCommand",
    "analyze",
    "classify",
    "effects_of",
    "parse",
    "redact",
    "study_analyze",
    "study_classify",
]

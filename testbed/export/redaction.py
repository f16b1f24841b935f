"""Redaction of exported text and JSON values: the run recorder's redactor, or none.

Contract: `Redactor(enabled=True)` is `testbed.analysis.redact.Redactor` (the redactor the
run recorder uses, with its memo of short texts): `text(value, kinds)` returns the value
with its secrets replaced and adds the kinds found to `kinds`; `json(value, kinds)` does the
same for a JSON value (every string, keys included, and the whole value of every key that
names a secret), keeping its structure. `Redactor(enabled=False)` returns every value
unchanged. `None` passes through `text`.
"""

from __future__ import annotations

from typing import Any

from testbed.analysis.redact import CACHE_ENTRIES, CACHE_MAX_CHARS
from testbed.analysis.redact import Redactor as TextRedactor

__all__ = ["CACHE_ENTRIES", "CACHE_MAX_CHARS", "Redactor"]


def _unchanged(value: Any, kinds: set[str]) -> Any:
    return value


class Redactor(TextRedactor):
    """Redacts secrets from exported values; see the module contract."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.enabled = enabled
        if not enabled:  # no wrapper on the enabled path: `text` runs once per exported string
            self.text = _unchanged  # type: ignore[method-assign]
            self.json = _unchanged  # type: ignore[method-assign]

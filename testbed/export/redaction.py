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


class Redactor(TextRedactor):
    """Redacts secrets from exported values; see the module contract."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.enabled = enabled

    def text(self, value: str | None, kinds: set[str]) -> str | None:  # type: ignore[override]
        """`value` with secrets replaced; the kinds replaced are added to `kinds`."""
        if not self.enabled or not value:
            return value
        return super().text(value, kinds)

    def json(self, value: Any, kinds: set[str]) -> Any:
        """A copy of the JSON value `value` with every string redacted (keys too)."""
        return super().json(value, kinds) if self.enabled else value

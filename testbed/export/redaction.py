"""Redaction of exported text and JSON values (a thin layer over `testbed.analysis.redact`).

Contracts:

- `Redactor(enabled=True)`: `text(value, kinds)` returns `redact(value).text` and adds the
  kinds found to the set `kinds`; `json(value, kinds)` does the same for every string
  (keys included) inside a JSON value and returns a new value (the structure is kept, so
  the JSON stays valid). `Redactor(enabled=False)` returns every value unchanged.
- Results of short texts (≤ `CACHE_MAX_CHARS`) are memoised in a bounded LRU cache:
  `redact` is a pure function and command texts and short outputs repeat a lot, so the
  cache changes speed, never results. Memory of the cache is bounded by
  `CACHE_ENTRIES * CACHE_MAX_CHARS` characters (twice: key and result).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from testbed.analysis.redact import redact

CACHE_MAX_CHARS = 512
CACHE_ENTRIES = 50_000


class Redactor:
    """Redacts secrets from exported values; see the module contract."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._cache: OrderedDict[str, tuple[str, tuple[str, ...]]] = OrderedDict()

    def _redact(self, value: str) -> tuple[str, tuple[str, ...]]:
        if len(value) > CACHE_MAX_CHARS:
            result = redact(value)
            return result.text, result.kinds
        hit = self._cache.get(value)
        if hit is not None:
            self._cache.move_to_end(value)
            return hit
        result = redact(value)
        entry = (result.text, result.kinds)
        self._cache[value] = entry
        if len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return entry

    def text(self, value: str | None, kinds: set[str]) -> str | None:
        """`value` with secrets replaced; the kinds replaced are added to `kinds`."""
        if not self.enabled or not value:
            return value
        text, found = self._redact(value)
        if found:
            kinds.update(found)
        return text

    def json(self, value: Any, kinds: set[str]) -> Any:
        """A copy of the JSON value `value` with every string redacted (keys too)."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            return self.text(value, kinds)
        if isinstance(value, dict):
            return {self.text(str(k), kinds): self.json(v, kinds) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v, kinds) for v in value]
        return value

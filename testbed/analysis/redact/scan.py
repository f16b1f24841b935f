"""The text under redaction, as every rule sees it, and the only ways rules read it.

Contract:

- `Scan(text)` holds `raw` (the text), `low` (its folded copy: same length, lower-cased,
  the non-ASCII letters that case-insensitive matching equates with ASCII ones folded to
  them, `[REDACTED:kind]` markers blanked to NUL so that no rule finds a key word inside
  one), `spans` (the secrets found: start, end, kind, rank) and `ops`.
- `ops` counts the work done, in characters examined. Rules read the text only through the
  methods below, or through a str or regex call whose cost they add to `ops` themselves;
  every method costs time proportional to what it adds. So `ops` bounds the running time,
  and a rule is linear in its input when its `ops` is: the unit tests assert that on
  adversarial inputs, and `benchmarks/redact.py` measures the time itself.
- The regexes given to `run_end` are single possessive character-class runs (`[...]*+`):
  they never backtrack, so they cost what they consume.
"""

from __future__ import annotations

import bisect
import re

MARKER_PREFIX = "[REDACTED:"
_MARKER = re.compile(r"\[REDACTED:\w*+\]")

# Characters that case-insensitive matching treats as an ASCII letter although lower()
# does not give that letter, and U+0130, the one character lower() lengthens.
_FOLD_FIXES = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
_FOLD_CHARS = tuple(map(chr, _FOLD_FIXES))

SPACE = frozenset(" \t\r\f\v\n")
QUOTES = frozenset("'\"")


def tag(kind: str) -> str:
    """The replacement marker for `kind`."""
    return f"{MARKER_PREFIX}{kind}]"


def _blank(m: re.Match[str]) -> str:
    return "\0" * (m.end() - m.start())


def fold(text: str) -> str:
    """`text` folded for key-word search: same length (see the module contract)."""
    if MARKER_PREFIX in text:
        text = _MARKER.sub(_blank, text)
    if not text.isascii() and any(map(text.__contains__, _FOLD_CHARS)):
        text = text.translate(_FOLD_FIXES)
    return text.lower()


def is_word_char(c: str) -> bool:
    r"""re's Unicode `\w`: a letter, digit or underscore."""
    return c.isalnum() or c == "_"


class Scan:
    """One text being redacted; see the module contract."""

    __slots__ = ("_hits", "_known", "_newlines", "low", "n", "ops", "raw", "spans")

    def __init__(
        self,
        raw: str,
        low: str | None = None,
        hits: dict[str, list[int]] | None = None,
        known: frozenset[str] = frozenset(),
    ) -> None:
        """`hits`: the occurrences of the needles `known` (found in one pass by the
        engine); any other needle is looked for when asked."""
        self.raw = raw
        self.low = fold(raw) if low is None else low
        self.n = len(raw)
        self._hits: dict[str, list[int]] = {} if hits is None else hits
        self._known = known
        self.ops = self.n + sum(map(len, self._hits.values()))
        self.spans: list[tuple[int, int, str, int]] = []
        self._newlines: list[int] | None = None

    # --- finding ---------------------------------------------------------------------

    def hits(self, needle: str) -> list[int]:
        """Ascending start positions of `needle` (lower-case) in the folded text."""
        found = self._hits.get(needle)
        if found is None and needle in self._known:
            return []
        if found is None:
            found = []
            low, i = self.low, self.low.find(needle)
            while i >= 0:
                found.append(i)
                i = low.find(needle, i + 1)
            self._hits[needle] = found
            self.ops += self.n + len(found)
        return found

    def present(self, needles: frozenset[str]) -> set[str]:
        """The members of `needles` that occur (of those found in the engine's one pass)."""
        return self._hits.keys() & needles

    def hits_of(self, needles: tuple[str, ...]) -> list[tuple[int, str]]:
        """(position, needle) of every occurrence of every needle, ascending."""
        found = [(i, needle) for needle in needles for i in self.hits(needle)]
        found.sort()
        self.ops += len(found)
        return found

    def find(self, sub: str, start: int, end: int) -> int:
        """`raw.find(sub, start, end)`."""
        i = self.raw.find(sub, start, end)
        self.ops += (i if i >= 0 else end) - start + 1
        return i

    # --- lines -----------------------------------------------------------------------

    def _lines(self) -> list[int]:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.raw)]
            self.ops += self.n
        return self._newlines

    def line_start(self, pos: int) -> int:
        """Start of the line holding `pos`."""
        nl = self._lines()
        k = bisect.bisect_left(nl, pos)
        self.ops += 1
        return nl[k - 1] + 1 if k else 0

    def line_end(self, pos: int) -> int:
        """End of the line holding `pos` (its newline, or the end of the text)."""
        nl = self._lines()
        k = bisect.bisect_left(nl, pos)
        self.ops += 1
        return nl[k] if k < len(nl) else self.n

    # --- runs ------------------------------------------------------------------------

    def run_end(self, run: re.Pattern[str], pos: int, end: int | None = None) -> int:
        """End of the run of `run` (a possessive class run) starting at `pos`."""
        m = run.match(self.raw, pos, self.n if end is None else end)
        stop = m.end() if m is not None else pos
        self.ops += stop - pos + 1
        return stop

    def key_start(self, pos: int, lo: int = 0) -> int:
        r"""Start of the run of key characters (`[\w.-]`) that ends at `pos`."""
        raw, i = self.raw, pos
        while i > lo and (raw[i - 1].isalnum() or raw[i - 1] in "_.-"):
            i -= 1
        self.ops += pos - i + 1
        return i

    # --- results ---------------------------------------------------------------------

    def add(self, start: int, end: int, kind: str, rank: int) -> None:
        """Record the secret `raw[start:end]` of `kind`; lower `rank` names a merged span."""
        if end > start:
            self.spans.append((start, end, kind, rank))
            self.ops += 1

    def _outside_markers(self) -> list[tuple[int, int, str, int]]:
        """The spans without the markers they overlap (a marker is never redacted again)."""
        if MARKER_PREFIX not in self.raw:
            return self.spans
        out: list[tuple[int, int, str, int]] = []
        for start, end, kind, rank in self.spans:
            pos = start
            for m in _MARKER.finditer(self.raw, max(0, start - 64), min(self.n, end + 64)):
                if m.end() > pos and m.start() < end:
                    if m.start() > pos:
                        out.append((pos, m.start(), kind, rank))
                    pos = max(pos, m.end())
            if pos < end:
                out.append((pos, end, kind, rank))
            self.ops += end - start + 128
        return out

    def merged(self) -> list[tuple[int, int, str]]:
        """The spans, markers already in the text left out, overlapping ones merged,
        ascending; a merged span takes the kind of its member of lowest rank (the first of
        those)."""
        out: list[tuple[int, int, str]] = []
        best = 0
        for start, end, kind, rank in sorted(self._outside_markers()):
            if out and start < out[-1][1]:
                s, e, k = out[-1]
                if rank < best:
                    k, best = kind, rank
                out[-1] = (s, max(e, end), k)
            else:
                out.append((start, end, kind))
                best = rank
        self.ops += len(self.spans)
        return out

"""Split the output of ``snapshot.sh`` into probe sections and parts, before any parsing.

Output grammar (see the header of ``snapshot.sh``; NONCE is random per run and a line is a
marker only when it carries that run's NONCE, so probe output can never forge one)::

    @@testbed-snapshot v=1 nonce=NONCE pid=PID up=SECONDS native=0|1@@   (native= since tbprobe)
    @@testbed-probe NONCE NAME up=SECONDS@@
    @@testbed-part NONCE PART@@
    ...output lines...
    @@testbed-truncated NONCE max_lines=N more=0|1 long_lines=M@@
    @@testbed-stderr NONCE@@ TEXT
    @@testbed-partend NONCE PART rc=RC@@
    @@testbed-unavailable NONCE NAME: REASON@@
    @@testbed-end NONCE NAME rc=0|1 up=SECONDS@@
    @@testbed-done NONCE probes=COUNT up=SECONDS@@

Contract of :func:`frame_snapshot`: it never raises. Lines outside any part of a section are
the section's ``loose`` lines; non-blank lines before the first section are ``stray``.
Without a header there are no sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from testbed.probes.parsers.formats import to_float, to_int

_HEADER_RE = re.compile(r"^@@testbed-snapshot v=(\S+) nonce=(\S+) pid=(\S*) up=(\S*)(?: native=([01]))?@@$")


@dataclass
class Part:
    """One command's output inside a probe section."""

    name: str
    lines: list[str] = field(default_factory=list)
    rc: int | None = None
    stderr: list[str] = field(default_factory=list)
    truncated: dict[str, int] | None = None


@dataclass
class Section:
    """One probe's section of the output: its parts, unavailable markers and timing."""

    name: str
    parts: dict[str, Part] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    loose: list[str] = field(default_factory=list)
    rc: int | None = None
    started: float | None = None
    ended: float | None = None

    def lines(self, part: str) -> list[str]:
        """Lines of *part*, or an empty list when the part did not run."""
        p = self.parts.get(part)
        return p.lines if p else []

    def has(self, part: str) -> bool:
        """True when *part* ran (whatever its exit status)."""
        return part in self.parts


@dataclass
class ParseContext:
    """Facts about the run that some parsers need (the script's own pid, for one)."""

    script_pid: int | None = None


@dataclass
class Framed:
    """The snapshot split into sections, before any probe-specific parsing."""

    version: str | None = None
    nonce: str | None = None
    script_pid: int | None = None
    native: bool = False  # the native helper (tbprobe) stood in for awk, find and grep
    started: float | None = None
    ended: float | None = None
    complete: bool = False
    sections: dict[str, Section] = field(default_factory=dict)
    stray: list[str] = field(default_factory=list)


def _marker_patterns(nonce: str) -> dict[str, re.Pattern[str]]:
    """Compile the marker regexes bound to this run's nonce."""
    n = re.escape(nonce)
    return {
        "probe": re.compile(rf"^@@testbed-probe {n} (\S+) up=(\S*)@@$"),
        "end": re.compile(rf"^@@testbed-end {n} (\S+) rc=(-?\d+) up=(\S*)@@$"),
        "part": re.compile(rf"^@@testbed-part {n} (\S+)@@$"),
        "partend": re.compile(rf"^@@testbed-partend {n} (\S+) rc=(-?\d+)@@$"),
        "unavailable": re.compile(rf"^@@testbed-unavailable {n} (\S+): (.*)@@$"),
        "truncated": re.compile(rf"^@@testbed-truncated {n} max_lines=(\d+) more=(\d+) long_lines=(\d+)@@$"),
        "stderr": re.compile(rf"^@@testbed-stderr {n}@@ ?(.*)$"),
        "done": re.compile(rf"^@@testbed-done {n} probes=(\d+) up=(\S*)@@$"),
    }


class _Framer:
    """State machine that assigns every output line to a section and part."""

    def __init__(self, nonce: str) -> None:
        self.pat = _marker_patterns(nonce)
        self.framed = Framed(nonce=nonce)
        self.section: Section | None = None
        self.part: Part | None = None

    def feed(self, line: str) -> None:
        """Consume one output line."""
        if line.startswith("@@testbed-") and self._marker(line):
            return
        if self.part is not None:
            self.part.lines.append(line)
        elif self.section is not None:
            self.section.loose.append(line)
        elif line.strip():
            self.framed.stray.append(line)

    def _marker(self, line: str) -> bool:
        """Handle *line* if it is a marker of this run; return whether it was."""
        for kind, pat in self.pat.items():
            m = pat.match(line)
            if m:
                getattr(self, "_on_" + kind)(m)
                return True
        return False

    def _on_probe(self, m: re.Match[str]) -> None:
        self.section = Section(name=m.group(1), started=to_float(m.group(2)))
        self.framed.sections[self.section.name] = self.section
        self.part = None

    def _on_end(self, m: re.Match[str]) -> None:
        if self.section is not None and self.section.name == m.group(1):
            self.section.rc = to_int(m.group(2))
            self.section.ended = to_float(m.group(3))
        self.section = None
        self.part = None

    def _on_part(self, m: re.Match[str]) -> None:
        if self.section is None:
            return
        self.part = Part(name=m.group(1))
        self.section.parts[self.part.name] = self.part

    def _on_partend(self, m: re.Match[str]) -> None:
        if self.part is not None and self.part.name == m.group(1):
            self.part.rc = to_int(m.group(2))
        self.part = None

    def _on_unavailable(self, m: re.Match[str]) -> None:
        if self.section is not None:
            self.section.unavailable[m.group(1)] = m.group(2)

    def _on_truncated(self, m: re.Match[str]) -> None:
        if self.part is not None:
            self.part.truncated = {
                "max_lines": int(m.group(1)),
                "more": int(m.group(2)),
                "long_lines": int(m.group(3)),
            }

    def _on_stderr(self, m: re.Match[str]) -> None:
        if self.part is not None:
            self.part.stderr.append(m.group(1))

    def _on_done(self, m: re.Match[str]) -> None:
        self.framed.complete = True
        self.framed.ended = to_float(m.group(2))
        self.section = None
        self.part = None


def frame_snapshot(text: str) -> Framed:
    """Split raw script output into sections. Never raises; without a header, no sections."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _HEADER_RE.match(ln)), None)
    if start is None:
        return Framed(stray=[ln for ln in lines if ln.strip()][:50])
    head = _HEADER_RE.match(lines[start])
    assert head is not None
    framer = _Framer(head.group(2))
    framer.framed.version = head.group(1)
    framer.framed.script_pid = to_int(head.group(3))
    framer.framed.started = to_float(head.group(4))
    framer.framed.native = head.group(5) == "1"
    for line in lines[start + 1 :]:
        framer.feed(line)
    return framer.framed

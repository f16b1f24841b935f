"""Build snapshot-script output without a guest: for tests of the parsers and of anything that
consumes parsed snapshots (residue analysis, dashboards).

A *fixture directory* holds one file per part, named ``PROBE.PART.txt`` (exit status 0) or
``PROBE.PART.rcN.txt`` (exit status N), containing exactly what the tool printed, plus an
optional ``unavailable.txt`` whose lines read ``PROBE NAME: reason`` (NAME is a part name, or
the probe name for a probe that could not run at all).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from testbed.probes.script import PROBES

FIXTURE_NONCE = "0b7c1d2e-3f40-4152-8a6b-7c8d9e0f1a2b"
FIXTURE_PID = 4242

PartSpec = tuple[str, int | None, str]
"""(part name, exit status, output) — exit status None marks the part unavailable and the
output is then the reason."""

_PART_FILE_RE = re.compile(r"^([a-z0-9_]+)\.([a-z0-9_]+?)(?:\.rc(\d+))?\.txt$")


def render_snapshot(
    probes: Mapping[str, Sequence[PartSpec] | str],
    *,
    nonce: str = FIXTURE_NONCE,
    pid: int = FIXTURE_PID,
    complete: bool = True,
) -> str:
    """Render script output for *probes* (``{probe: [PartSpec] | unavailable reason}``) in
    the order given, framed exactly as ``snapshot.sh`` frames it."""
    out = [f"@@testbed-snapshot v=1 nonce={nonce} pid={pid} up=100.00@@"]
    for name, spec in probes.items():
        out.append(f"@@testbed-probe {nonce} {name} up=100.00@@")
        if isinstance(spec, str):
            out.append(f"@@testbed-unavailable {nonce} {name}: {spec}@@")
            spec = []
        for part, rc, text in spec:
            if rc is None:
                out.append(f"@@testbed-unavailable {nonce} {part}: {text}@@")
                continue
            out.append(f"@@testbed-part {nonce} {part}@@")
            out.extend(text.splitlines())
            out.append(f"@@testbed-partend {nonce} {part} rc={rc}@@")
        failed = any(rc not in (0, None) for _, rc, _ in spec)
        out.append(f"@@testbed-end {nonce} {name} rc={int(failed)} up=100.50@@")
    if complete:
        out.append(f"@@testbed-done {nonce} probes={len(probes)} up=101.00@@")
    return "\n".join(out) + "\n"


def load_fixture_dir(path: Path, overrides: Mapping[tuple[str, str], str] | None = None) -> dict[str, list[PartSpec]]:
    """Read a fixture directory into ``{probe: [PartSpec]}`` ordered like :data:`PROBES`.

    *overrides* replaces (or adds) the output of ``(probe, part)`` with the given text."""
    parts: dict[str, list[PartSpec]] = {}
    for file in sorted(path.glob("*.txt")):
        m = _PART_FILE_RE.match(file.name)
        if not m or file.name == "unavailable.txt":
            continue
        rc = int(m.group(3)) if m.group(3) else 0
        parts.setdefault(m.group(1), []).append((m.group(2), rc, file.read_text("utf-8")))
    unavailable = path / "unavailable.txt"
    if unavailable.exists():
        for line in unavailable.read_text("utf-8").splitlines():
            probe, _, rest = line.partition(" ")
            part, _, reason = rest.partition(": ")
            if probe and part:
                parts.setdefault(probe, []).append((part, None, reason))
    for (probe, part), text in (overrides or {}).items():
        specs = [s for s in parts.get(probe, []) if s[0] != part]
        parts[probe] = [*specs, (part, 0, text)]
    order = {name: i for i, name in enumerate(PROBES)}
    return dict(sorted(parts.items(), key=lambda kv: order.get(kv[0], len(order))))


def snapshot_from_dir(
    path: Path, overrides: Mapping[tuple[str, str], str] | None = None, *, complete: bool = True
) -> str:
    """Script output assembled from a fixture directory (see :func:`load_fixture_dir`)."""
    return render_snapshot(load_fixture_dir(path, overrides), complete=complete)

"""The study collector's observations as testbed snapshot data (what the residue engine reads).

The collector records, per node and phase, a few command outputs ("observations"):
`boot-identity`, `platform`, `temporary-files`, `failed-services`, `listening-sockets`,
`package-health`. Contracts of the conversion:

- `temporary-files` (paths below /tmp) → probe `tmp_files` (`{"entries": {path: {"type"}},
  "count"}`; a path that has listed entries below it is a `dir`, any other a `file`; the
  collector records no modes, sizes or times, so only additions and removals show).
- `listening-sockets` (`ss` lines) → probe `listening` (`{"source": "ss", "sockets": [...]}`,
  parsed by the probe's own parser).
- `platform` → probe `os` (the os-release fields and the kernel line); `boot-identity` →
  probe `boot`.
- An observation whose `status` is not `observed` or whose return code is not 0 makes its
  probe `{"unavailable": reason}`. Probes the collector has no observation for are absent,
  which the residue engine reports as missing (verdict `undetermined` when nothing was found).
- Phases map to snapshot points: before_prepare → before_setup, after_prepare → after_setup,
  after_executor → after_agent.
"""

from __future__ import annotations

from typing import Any

from testbed.model.vocab import SnapshotPoint
from testbed.probes.parsers.network import parse_ss_lines
from testbed.probes.parsers.system import os_record

POINTS: dict[str, str] = {
    "before_prepare": SnapshotPoint.BEFORE_SETUP,
    "after_prepare": SnapshotPoint.AFTER_SETUP,
    "after_executor": SnapshotPoint.AFTER_AGENT,
}


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def tmp_files(text: str) -> dict[str, Any]:
    paths = sorted(set(_lines(text)))
    dirs = {p for p in paths if any(o.startswith(p.rstrip("/") + "/") for o in paths)}
    entries = {p: {"type": "dir" if p in dirs else "file"} for p in paths}
    return {"entries": entries, "count": len(entries)}


def listening(text: str) -> dict[str, Any]:
    sockets, unparsed = parse_ss_lines(_lines(text))
    out: dict[str, Any] = {"source": "ss", "sockets": sockets}
    if unparsed:
        out["unparsed"] = unparsed[:50]
    return out


def os_probe(text: str) -> dict[str, Any]:
    release: dict[str, str] = {}
    kernel = ""
    for line in _lines(text):
        key, sep, value = line.partition("=")
        if sep and key.isupper():
            release[key] = value.strip().strip('"')
        elif line.startswith("Linux "):
            kernel = line
    parts = kernel.split()
    facts = dict(zip(("sysname", "release", "machine"), parts[:3], strict=False))
    return os_record(release, facts)


def boot(text: str) -> dict[str, Any]:
    ids = [line for line in _lines(text) if not line.startswith("source=")]
    return {"boot_id": ids[-1] if ids else None, "uptime_s": None, "clock": None}


CONVERTERS = {"temporary-files": ("tmp_files", tmp_files), "listening-sockets": ("listening", listening),
              "platform": ("os", os_probe), "boot-identity": ("boot", boot)}  # fmt: skip


def node_snapshot(observations: list[Any]) -> dict[str, Any]:
    """One node's observations as testbed snapshot data (probe name → data)."""
    data: dict[str, Any] = {}
    for obs in observations:
        if not isinstance(obs, dict):
            continue
        kind = str(obs.get("id") or "").rsplit(":", 1)[-1]
        if kind not in CONVERTERS:
            continue
        probe, convert = CONVERTERS[kind]
        if obs.get("status") != "observed" or obs.get("return_code") not in (0, None):
            data[probe] = {"unavailable": f"collector: {obs.get('status')} (return code {obs.get('return_code')})"}
            continue
        data[probe] = convert(str(obs.get("stdout") or ""))
    return data


def snapshot_points(snapshots: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """phase snapshots → node → point → data."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for phase, snapshot in snapshots.items():
        point = POINTS.get(phase)
        if point is None:
            continue
        for node in snapshot.get("nodes") or []:
            if isinstance(node, dict) and node.get("name"):
                out.setdefault(str(node["name"]), {})[point] = node_snapshot(node.get("observations") or [])
    return out

"""Inputs of the parser golden test: every recorded snapshot output the unit tests hold.

`golden_inputs()` returns ``{case: script output}``: each fixture directory under
tests/unit/fixtures/probes rendered whole, cut short before a probe and in the middle of a
part, and each of its parts rendered alone as its probe's only part; plus
the hand-written outputs of the parser tests (forged markers, diagnostics, fallbacks,
garbage). `golden_outputs()` parses them; `record()` writes the result to `GOLDEN`, which
was recorded on the code before the parsers became a package.

Run ``python -m tests.unit.probes.parsers.golden`` to re-record (only for an intended change of
parser output, named in the commit).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from testbed.probes import parse_snapshot
from testbed.testing.snapshots import FIXTURE_NONCE, load_fixture_dir, render_snapshot, snapshot_from_dir
from tests.unit.probes.parsers.recorded import FIXTURES

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "parsers_golden.json"
N = FIXTURE_NONCE


def _fixture_cases() -> dict[str, str]:
    cases: dict[str, str] = {}
    for distro in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        name = distro.name
        full = snapshot_from_dir(distro)
        cases[f"{name}/full"] = full
        cut = full.index(f"@@testbed-probe {N} users")
        cases[f"{name}/cut-before-users"] = full[:cut]
        inside = full.index("\n", full.index(f"@@testbed-part {N} passwd")) + 1
        cases[f"{name}/cut-inside-passwd"] = full[: full.index("\n", inside) + 1]
        for probe, parts in load_fixture_dir(distro).items():
            for part in parts:
                cases[f"{name}/{probe}.{part[0]}"] = render_snapshot({probe: [part]})
    return cases


_DIAGNOSTICS = [
    f"@@testbed-snapshot v=1 nonce={N} pid=9 up=1.00@@",
    f"@@testbed-probe {N} tmp_files up=1.00@@",
    f"@@testbed-part {N} entries@@",
    'directory\t1777\t0\troot\t0\troot\t4096\t1\t"/tmp"',
    "garbage line",
    f"@@testbed-truncated {N} max_lines=5000 more=1 long_lines=2@@",
    f"@@testbed-stderr {N}@@ find: '/tmp/x': Permission denied",
    f"@@testbed-partend {N} entries rc=1@@",
    f"@@testbed-end {N} tmp_files rc=1 up=1.25@@",
    f"@@testbed-probe {N} firewall up=1.25@@",
    f"@@testbed-unavailable {N} nft: nft not found@@",
    f"@@testbed-unavailable {N} iptables: iptables-save not found@@",
    f"@@testbed-end {N} firewall rc=0 up=1.25@@",
    f"@@testbed-probe {N} mystery up=1.25@@",
    "loose line outside any part",
    f"@@testbed-part {N} only@@",
    "x",
    f"@@testbed-partend {N} only rc=0@@",
    f"@@testbed-end {N} mystery rc=0 up=1.30@@",
    f"@@testbed-done {N} probes=3 up=1.50@@",
]

_FORGED = "\n".join(
    [
        "@@testbed-partend 11111111-2222 entries rc=0@@",
        "@@testbed-end 11111111-2222 tmp_files rc=0 up=1@@",
        f"@@testbed-end {N} tmp_files rc=0@@ trailing",
    ]
)

_SYSCTL_PROC = [
    "/proc/sys/net/ipv4/ip_forward:1",
    "/proc/sys/net/ipv4/conf/eth0.100/forwarding:1",
    "/proc/sys/kernel/random/uuid:abc",
    "/proc/sys/fs/file-max:100",
]

_NETSTAT_NO_PID = [
    "Proto Recv-Q Send-Q Local Address           Foreign Address         State",
    "tcp        0      0 0.0.0.0:2024            0.0.0.0:*               LISTEN",
    "udp        0      0 0.0.0.0:68              0.0.0.0:*",
]

_APP_FILES = [
    "regular empty file\t644\t0\troot\t0\troot\t0\t1709630700\t/opt/raw name",
    'directory\t755\t0\troot\t0\troot\t4096\t1709630000\t"/srv"',
    'regular file\t640\t33\twww-data\t33\twww-data\t1200\t1709630500\t"/srv/app/config\\nodd.yml"',
    'symbolic link\t777\t0\troot\t0\troot\t12\t1709630600\t"/srv/current" -> "/srv/app"',
    "not a stat line",
]


def _edge_cases() -> dict[str, str]:
    return {
        "edge/empty": "",
        "edge/binary": "\x00\x01binary",
        "edge/no-header": "no header here\n@@testbed-end x@@",
        "edge/diagnostics": "\n".join(_DIAGNOSTICS),
        "edge/forged-markers": render_snapshot({"tmp_files": [("entries", 0, _FORGED)], "boot": [("boot", 0, "")]}),
        "edge/sysctl-proc": render_snapshot({"sysctl": [("sysctl", 0, "\n".join(_SYSCTL_PROC))]}),
        "edge/netstat-no-pid": render_snapshot({"listening": [("netstat", 0, "\n".join(_NETSTAT_NO_PID))]}),
        "edge/app-files": render_snapshot({"app_files": [("entries", 0, "\n".join(_APP_FILES))]}),
        "edge/app-files-unavailable": render_snapshot({"app_files": "none of /srv /opt exists"}),
    }


@functools.cache
def golden_inputs() -> dict[str, str]:
    """Every case name and its script output."""
    return {**_fixture_cases(), **_edge_cases()}


def golden_output(case: str) -> dict[str, Any]:
    """``parse_snapshot`` of *case*; for a single part rendered alone, without the probes
    that are merely ``missing from output``."""
    parsed = parse_snapshot(golden_inputs()[case])
    if case.startswith("edge/") or "." not in case:
        return parsed
    return {k: v for k, v in parsed.items() if v != {"unavailable": "missing from output"}}


def golden_outputs() -> dict[str, Any]:
    """``{case: golden_output(case)}`` in case order."""
    return {case: golden_output(case) for case in golden_inputs()}


def dump(outputs: dict[str, Any]) -> str:
    """The byte form compared by the test: key order kept, non-ASCII kept."""
    return json.dumps(outputs, indent=1, ensure_ascii=False) + "\n"


def record() -> None:
    """Write the current parser output to `GOLDEN`."""
    GOLDEN.write_text(dump(golden_outputs()), "utf-8")


if __name__ == "__main__":
    record()

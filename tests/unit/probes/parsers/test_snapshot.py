"""parse_snapshot: every recorded fixture parses cleanly; truncated and garbage output; the
diagnostic keys (unparsed, stderr, truncated, unavailable parts) and the _meta timing."""

from __future__ import annotations

import json

import pytest

from testbed.probes import PROBES, parse_snapshot
from testbed.testing.snapshots import FIXTURE_NONCE, snapshot_from_dir
from tests.unit.probes.parsers.recorded import FIXTURES, load


@pytest.mark.parametrize("distro", ["debian", "rhel", "alpine"])
def test_every_fixture_probe_parses_cleanly(distro: str) -> None:
    parsed = load(distro)
    assert parsed["_meta"]["complete"] is True
    for name in PROBES:
        value = parsed[name]
        if name == "router":  # FRR's probe: none of these distributions has vtysh
            assert value == {"unavailable": "vtysh not found"}
            continue
        assert "unavailable" not in value, (name, value)
        assert "parse_error" not in value, (name, value)
    json.dumps(parsed)  # JSON-able


def test_truncated_output_marks_missing_probes_and_incomplete() -> None:
    full = snapshot_from_dir(FIXTURES / "debian")
    cut = full[: full.index("@@testbed-probe " + FIXTURE_NONCE + " users")]
    parsed = parse_snapshot(cut)
    assert parsed["_meta"]["complete"] is False
    assert parsed["boot"]["boot_id"] == "3f6b1a0e-5c1d-4d7a-9a4f-2b8e1c7d9e01"
    assert parsed["users"] == {"unavailable": "missing from output"}
    assert parsed["network"] == {"unavailable": "missing from output"}


@pytest.mark.parametrize("garbage", ["", "\x00\x01binary", "no header here\n@@testbed-end x@@"])
def test_garbage_never_raises(garbage: str) -> None:
    parsed = parse_snapshot(garbage)
    assert parsed["_meta"]["complete"] is False
    assert all(parsed[name] == {"unavailable": "missing from output"} for name in PROBES)


def test_diagnostics_stderr_truncation_and_unavailable() -> None:
    n = FIXTURE_NONCE
    text = "\n".join(
        [
            f"@@testbed-snapshot v=1 nonce={n} pid=9 up=1.00@@",
            f"@@testbed-probe {n} tmp_files up=1.00@@",
            f"@@testbed-part {n} entries@@",
            'directory\t1777\t0\troot\t0\troot\t4096\t1\t"/tmp"',
            "garbage line",
            f"@@testbed-truncated {n} max_lines=5000 more=1 long_lines=2@@",
            f"@@testbed-stderr {n}@@ find: '/tmp/x': Permission denied",
            f"@@testbed-partend {n} entries rc=1@@",
            f"@@testbed-end {n} tmp_files rc=1 up=1.25@@",
            f"@@testbed-probe {n} firewall up=1.25@@",
            f"@@testbed-unavailable {n} nft: nft not found@@",
            f"@@testbed-unavailable {n} iptables: iptables-save not found@@",
            f"@@testbed-end {n} firewall rc=0 up=1.25@@",
            f"@@testbed-done {n} probes=2 up=1.50@@",
        ]
    )
    parsed = parse_snapshot(text)
    tmp = parsed["tmp_files"]
    assert list(tmp["entries"]) == ["/tmp"]
    assert tmp["unparsed"] == ["garbage line"]
    assert tmp["truncated"] == {"entries": {"max_lines": 5000, "more": 1, "long_lines": 2}}
    assert tmp["stderr"] == {"entries": ["find: '/tmp/x': Permission denied"]}
    assert tmp["part_rc"] == {"entries": 1}
    assert parsed["firewall"] == {"unavailable": "nft: nft not found; iptables: iptables-save not found"}
    meta = parsed["_meta"]
    assert meta["complete"] is True and meta["script_pid"] == 9
    assert meta["probe_seconds"]["tmp_files"] == pytest.approx(0.25)
    assert meta["duration_s"] == pytest.approx(0.5)

"""Snapshot output built without a guest frames exactly like the script's: every part,
exit status and unavailable marker comes back through the framer; fixture directories load
in probe order with overrides."""

from __future__ import annotations

from pathlib import Path

from testbed.probes import PROBES
from testbed.probes.parsers import frame_snapshot
from testbed.testing.snapshots import FIXTURE_NONCE, FIXTURE_PID, load_fixture_dir, render_snapshot, snapshot_from_dir

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes"


def test_render_round_trips_through_the_framer() -> None:
    text = render_snapshot(
        {
            "boot": [("boot", 0, "boot_id=x\nuptime=1.5")],
            "firewall": [("nft", None, "nft not found"), ("iptables", 1, "*filter")],
            "cron": "systemd not running",
        },
        nonce="n-1",
        pid=77,
    )
    framed = frame_snapshot(text)
    assert (framed.nonce, framed.script_pid, framed.complete, framed.stray) == ("n-1", 77, True, [])
    assert list(framed.sections) == ["boot", "firewall", "cron"]
    boot = framed.sections["boot"]
    assert (boot.lines("boot"), boot.parts["boot"].rc, boot.rc) == (["boot_id=x", "uptime=1.5"], 0, 0)
    fw = framed.sections["firewall"]
    assert fw.unavailable == {"nft": "nft not found"} and list(fw.parts) == ["iptables"]
    assert (fw.parts["iptables"].rc, fw.rc) == (1, 1)
    assert framed.sections["cron"].unavailable == {"cron": "systemd not running"}


def test_incomplete_output_has_no_done_marker() -> None:
    text = render_snapshot({"boot": [("boot", 0, "")]}, complete=False)
    assert "@@testbed-done" not in text
    assert frame_snapshot(text).complete is False
    assert f"pid={FIXTURE_PID}" in text and FIXTURE_NONCE in text


def test_fixture_dir_loads_in_probe_order_with_rc_and_unavailable_parts(tmp_path: Path) -> None:
    (tmp_path / "users.passwd.txt").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (tmp_path / "boot.boot.txt").write_text("boot_id=b\n")
    (tmp_path / "pkg_health.dpkg_audit.rc1.txt").write_text("broken\n")
    (tmp_path / "unavailable.txt").write_text("firewall nft: nft not found\n")
    (tmp_path / "notes.md").write_text("ignored")
    parts = load_fixture_dir(tmp_path, {("users", "passwd"): "alice:x:1:1::/h:/bin/sh\n", ("os", "kernel"): "k=v"})
    order = [PROBES.index(p) for p in parts]
    assert order == sorted(order) and set(parts) == {"boot", "os", "users", "pkg_health", "firewall"}
    assert parts["pkg_health"] == [("dpkg_audit", 1, "broken\n")]
    assert parts["firewall"] == [("nft", None, "nft not found")]
    assert parts["users"] == [("passwd", 0, "alice:x:1:1::/h:/bin/sh\n")]
    assert parts["os"] == [("kernel", 0, "k=v")]


def test_recorded_fixture_dirs_frame_every_probe() -> None:
    for distro in ("debian", "rhel", "alpine"):
        framed = frame_snapshot(snapshot_from_dir(FIXTURES / distro))
        assert framed.complete and set(framed.sections) == set(PROBES), distro

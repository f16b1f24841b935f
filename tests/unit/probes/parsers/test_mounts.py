"""mounts: /proc/mounts with escaped blanks, df usage."""

from __future__ import annotations

from typing import Any


def test_debian_mounts(debian: dict[str, Any]) -> None:
    mounts = {m["mountpoint"]: m for m in debian["mounts"]["mounts"]}
    assert mounts["/"]["fstype"] == "ext4" and mounts["/"]["device"] == "/dev/vda1"
    assert "errors=remount-ro" in mounts["/"]["options"]
    assert "/srv/My Data" in mounts
    df = {d["mountpoint"]: d for d in debian["mounts"]["df"]}
    assert df["/"] == {
        "filesystem": "/dev/vda1",
        "size_kb": 2006736,
        "used_kb": 1139172,
        "avail_kb": 746340,
        "capacity_pct": 61,
        "mountpoint": "/",
    }
    assert "/srv/My Data" in df

"""Parsed snapshots (the shape `testbed.probes.parse_snapshot` returns) of the demo's guests:
`base_snapshot` of a freshly booted guest and `evolve`, the same guest at a later point of
a demo run. Used by the demo database (`testbed.testing.demo`) and the dashboard benchmark.
"""

from __future__ import annotations

import copy
from typing import Any

OS_RELEASES: dict[str, str] = {
    "debian-12": "Debian GNU/Linux 12 (bookworm)",
    "alpine-3.20": "Alpine Linux v3.20",
    "rocky-9": "Rocky Linux 9.4 (Blue Onyx)",
    "ubuntu-24.04": "Ubuntu 24.04.1 LTS",
}
"""Image → the `os_release` recorded for its nodes."""


def base_snapshot(image: str, node: str, packages: int = 120) -> dict[str, Any]:
    """A parsed snapshot (the shape `testbed.probes.parse_snapshot` returns) of a freshly
    booted `image` guest named `node`, with `packages` filler packages."""
    pkgs = [
        {"name": f"lib{name}{i}", "version": f"1.{i}.0-1", "arch": "amd64", "status": "ii", "installed": True}
        for i, name in enumerate(["ssl", "c", "z", "xml", "curl", "ffi"] * (packages // 6 + 1))
    ][:packages]
    return {
        "boot": {"boot_id": f"boot-{node}-1"},
        "os": {"os_release": {"PRETTY_NAME": OS_RELEASES.get(image, image)}, "hostname": node, "kernel": {}},
        "packages": {"manager": "dpkg", "packages": pkgs},
        "services": {
            "init": "systemd",
            "failed": [],
            "units": {
                "ssh.service": {"load": "loaded", "active": "active", "sub": "running"},
                "cron.service": {"load": "loaded", "active": "active", "sub": "running"},
            },
            "unit_files": {"ssh.service": "enabled", "cron.service": "enabled"},
        },
        "listening": {"sockets": [{"key": "tcp:0.0.0.0:22", "processes": [{"name": "sshd", "pid": 531}]}]},
        "tmp_files": {
            "entries": {"/tmp": {"type": "dir", "mode": "1777", "owner": "root", "group": "root", "size": 4096}}
        },
        "users": {
            "users": {"root": {"uid": 0, "gid": 0, "home": "/root", "shell": "/bin/bash"}},
            "groups": {"root": {"gid": 0, "members": []}},
        },
        "sysctl": {"values": {"net.ipv4.ip_forward": "0", "vm.swappiness": "60"}},
    }


def evolve(snapshot: dict[str, Any], point: str, *, residue: bool, service: str = "nginx") -> dict[str, Any]:
    """`snapshot` as it looks at `point` of a demo run: setup installs `service`, the agent
    starts it on 8080 (and leaves /tmp/notes.txt when `residue`), a reboot changes the boot id."""
    snap = copy.deepcopy(snapshot)
    if point in ("after_setup", "after_agent", "after_reboot"):
        snap["packages"]["packages"].append(
            {"name": service, "version": "1.22.1-9", "arch": "amd64", "status": "ii", "installed": True}
        )
        snap["services"]["unit_files"][f"{service}.service"] = "disabled"
    if point in ("after_agent", "after_reboot"):
        snap["services"]["unit_files"][f"{service}.service"] = "enabled"
        snap["services"]["units"][f"{service}.service"] = {"load": "loaded", "active": "active", "sub": "running"}
        snap["listening"]["sockets"].append({"key": "tcp:0.0.0.0:8080", "processes": [{"name": service}]})
        if residue:
            snap["tmp_files"]["entries"]["/tmp/notes.txt"] = {
                "type": "file",
                "mode": "0644",
                "owner": "root",
                "group": "root",
                "size": 212,
                "sha256": "9f2c" * 16,
            }
    if point == "after_reboot":
        snap["boot"]["boot_id"] = snap["boot"]["boot_id"].replace("-1", "-2")
    return snap

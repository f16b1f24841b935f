"""NoCloud seed ISOs: read back with pycdlib, check the volume id and the YAML documents."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pycdlib
import pytest
import yaml

from testbed.images.cloudinit import NoCloudExtras, make_nocloud_seed

PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey testbed-host"
AGENT_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHarness testbed-harness"


def read_iso(path: Path) -> tuple[str, dict[str, str]]:
    iso = pycdlib.PyCdlib()
    iso.open(str(path))
    try:
        volume = iso.pvd.volume_identifier.decode().strip()
        files: dict[str, str] = {}
        for child in iso.list_children(rr_path="/"):
            if child.is_dir():
                continue
            name = child.rock_ridge.name().decode()
            buf = io.BytesIO()
            iso.get_file_from_iso_fp(buf, rr_path=f"/{name}")
            files[name] = buf.getvalue().decode()
            joliet = io.BytesIO()
            iso.get_file_from_iso_fp(joliet, joliet_path=f"/{name}")
            assert joliet.getvalue() == buf.getvalue()
        return volume, files
    finally:
        iso.close()


def load(text: str) -> Any:
    return yaml.safe_load(text)


def test_seed_iso_contents(tmp_path: Path) -> None:
    network = {"version": 2, "ethernets": {"eth0": {"dhcp4": True}}}
    dest = make_nocloud_seed(
        tmp_path / "seeds" / "web.iso",
        hostname="web",
        instance_id="run-abc-web",
        authorized_keys=[AGENT_KEY],
        host_keys={"ed25519": (PRIVATE, PUBLIC)},
        network_config=network,
    )
    assert dest == tmp_path / "seeds" / "web.iso" and dest.is_file()
    assert [p.name for p in dest.parent.iterdir()] == ["web.iso"]
    volume, files = read_iso(dest)
    assert volume == "cidata"
    assert set(files) == {"meta-data", "user-data", "network-config"}
    assert load(files["meta-data"]) == {"instance-id": "run-abc-web", "local-hostname": "web"}
    assert files["user-data"].startswith("#cloud-config\n")
    user = load(files["user-data"])
    assert user["hostname"] == "web"
    assert user["ssh_authorized_keys"] == [AGENT_KEY]
    assert user["disable_root"] is False
    assert user["ssh_pwauth"] is False
    assert user["ssh_keys"] == {"ed25519_private": PRIVATE, "ed25519_public": PUBLIC}
    assert "users" not in user
    assert load(files["network-config"]) == network


def test_seed_for_a_non_root_user_without_network(tmp_path: Path) -> None:
    dest = make_nocloud_seed(
        tmp_path / "seed.iso",
        hostname="db",
        instance_id="i-2",
        authorized_keys=[AGENT_KEY],
        user="ubuntu",
    )
    _, files = read_iso(dest)
    assert set(files) == {"meta-data", "user-data"}
    user = load(files["user-data"])
    assert user["ssh_authorized_keys"] == [AGENT_KEY]  # root
    [entry] = user["users"]
    assert entry["name"] == "ubuntu"
    assert entry["ssh_authorized_keys"] == [AGENT_KEY]
    assert entry["lock_passwd"] is True
    assert "ssh_keys" not in user


def test_network_config_without_version_gets_v2(tmp_path: Path) -> None:
    dest = make_nocloud_seed(
        tmp_path / "seed.iso",
        hostname="r1",
        instance_id="i-3",
        authorized_keys=[],
        network_config={"ethernets": {"eth1": {"addresses": ["10.0.0.1/24"]}}},
    )
    _, files = read_iso(dest)
    assert load(files["network-config"])["version"] == 2


def test_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="host key type"):
        make_nocloud_seed(
            tmp_path / "a.iso", hostname="h", instance_id="i", authorized_keys=[], host_keys={"dsa": (PRIVATE, PUBLIC)}
        )
    with pytest.raises(ValueError, match="version 2"):
        make_nocloud_seed(
            tmp_path / "b.iso",
            hostname="h",
            instance_id="i",
            authorized_keys=[],
            network_config={"version": 1, "config": []},
        )
    assert not list(tmp_path.iterdir())


def test_extras_become_write_files_bootcmd_and_runcmd(tmp_path: Path) -> None:
    extras = NoCloudExtras(
        etc_hosts="127.0.0.1\tlocalhost\n10.0.0.2\tweb\n",
        files={"etc/frr/frr.conf": (b"hostname r1\n", 0o640)},
        bootcmd=["sysctl -w net.ipv4.ip_forward=1"],
        runcmd=["chown frr:frr /etc/frr/frr.conf"],
    )
    dest = make_nocloud_seed(tmp_path / "s.iso", hostname="r1", instance_id="i", authorized_keys=[], extras=extras)
    user = load(read_iso(dest)[1]["user-data"])
    assert user["manage_etc_hosts"] is False
    assert [(f["path"], f["permissions"], f["encoding"]) for f in user["write_files"]] == [
        ("/etc/frr/frr.conf", "0640", "b64"),
        ("/etc/hosts", "0644", "b64"),
    ]
    assert base64.b64decode(user["write_files"][1]["content"]).decode().endswith("10.0.0.2\tweb\n")
    assert user["bootcmd"] == ["sysctl -w net.ipv4.ip_forward=1"]
    assert user["runcmd"] == ["chown frr:frr /etc/frr/frr.conf"]


def test_without_extras_cloud_init_manages_etc_hosts(tmp_path: Path) -> None:
    dest = make_nocloud_seed(tmp_path / "s.iso", hostname="h", instance_id="i", authorized_keys=[])
    user = load(read_iso(dest)[1]["user-data"])
    assert user["manage_etc_hosts"] is True
    assert not {"write_files", "bootcmd", "runcmd"} & set(user)

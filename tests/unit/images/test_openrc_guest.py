"""What an OpenRC guest does differently: the seed's networkd files become ifupdown stanzas
(the real guest script, run with sh against the real seed files), and the harness drives
services and reboots through OpenRC's commands."""

from __future__ import annotations

import os
import subprocess
from importlib import resources
from pathlib import Path

from testbed.hypervisor.seed import InterfaceConfig, SeedSpec, seed_files
from testbed.model.services import detached_reboot, service_manager

SCRIPT = resources.files("testbed.images").joinpath("guestfiles", "testbed-seed-ifupdown.sh").read_text()


def _seed(tmp_path: Path, interfaces: list[InterfaceConfig]) -> Path:
    spec = SeedSpec("router", ["ssh-ed25519 AAAA test"], "key", "pub", interfaces, {})
    root = tmp_path / "root"
    for rel, (content, _mode) in seed_files(spec).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


def _sys_net(tmp_path: Path, nics: dict[str, str]) -> Path:
    sysnet = tmp_path / "sys-class-net"
    for name, mac in nics.items():
        (sysnet / name).mkdir(parents=True)
        (sysnet / name / "address").write_text(mac + "\n")
    (sysnet / "lo").mkdir()
    (sysnet / "lo" / "address").write_text("00:00:00:00:00:00\n")
    return sysnet


def _run(root: Path, sysnet: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "testbed-seed-ifupdown"
    script.write_text(SCRIPT)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TESTBED_NETWORKD": str(root / "etc" / "systemd" / "network"),
        "TESTBED_IFUPDOWN": str(root / "etc" / "network" / "interfaces.d"),
        "TESTBED_SYS_NET": str(sysnet),
    }
    return subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)


def test_seed_interfaces_become_ifupdown_stanzas(tmp_path: Path) -> None:
    interfaces = [
        InterfaceConfig(mac="52:54:00:AA:00:01", address="10.213.0.10/24", name="mgmt"),
        InterfaceConfig(
            mac="52:54:00:aa:00:02",
            address="10.213.5.1/24",
            routes=[("10.213.6.0/24", "10.213.5.2"), ("10.213.7.0/24", "10.213.5.3")],
            forward=True,
            name="lan",
        ),
    ]
    root = _seed(tmp_path, interfaces)
    sysnet = _sys_net(tmp_path, {"eth0": "52:54:00:aa:00:01", "eth1": "52:54:00:aa:00:02"})
    result = _run(root, sysnet, tmp_path)
    assert result.returncode == 0, result.stderr
    out = root / "etc" / "network" / "interfaces.d"
    assert sorted(p.name for p in out.iterdir()) == ["testbed-eth0", "testbed-eth1"]
    eth0 = (out / "testbed-eth0").read_text().splitlines()
    assert eth0[1:] == ["auto eth0", "iface eth0 inet static", "    address 10.213.0.10/24"]
    eth1 = (out / "testbed-eth1").read_text().splitlines()
    assert eth1[1:] == [
        "auto eth1",
        "iface eth1 inet static",
        "    address 10.213.5.1/24",
        "    up ip route replace 10.213.6.0/24 via 10.213.5.2",
        "    up ip route replace 10.213.7.0/24 via 10.213.5.3",
    ]


def test_an_unknown_mac_is_reported_and_skipped(tmp_path: Path) -> None:
    root = _seed(tmp_path, [InterfaceConfig(mac="52:54:00:aa:00:09", address="10.0.0.1/24", name="x")])
    result = _run(root, _sys_net(tmp_path, {"eth0": "52:54:00:aa:00:01"}), tmp_path)
    assert result.returncode == 0
    assert "no interface has MAC 52:54:00:aa:00:09" in result.stderr
    assert list((root / "etc" / "network" / "interfaces.d").iterdir()) == []


def test_dhcp_interface_gets_a_dhcp_stanza(tmp_path: Path) -> None:
    root = _seed(tmp_path, [InterfaceConfig(mac="52:54:00:aa:00:01", address=None, name="mgmt")])
    assert _run(root, _sys_net(tmp_path, {"eth0": "52:54:00:aa:00:01"}), tmp_path).returncode == 0
    stanza = (root / "etc" / "network" / "interfaces.d" / "testbed-eth0").read_text()
    assert "iface eth0 inet dhcp" in stanza


def test_service_commands_per_init_system() -> None:
    openrc, systemd = service_manager("openrc"), service_manager("systemd")
    assert openrc.enable == "rc-update add {service} default"
    assert openrc.is_active == "rc-service {service} status"
    assert systemd.restart == "systemctl restart {service}"
    assert openrc.reboot == "reboot" and systemd.reboot == "systemctl reboot"
    assert service_manager("other").enable is None
    reboot = detached_reboot("openrc")
    assert reboot.startswith("nohup sh -c 'sleep 1; reboot'") and reboot.endswith("&")

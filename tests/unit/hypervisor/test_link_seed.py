"""What a node on links is seeded with: NIC names by MAC (.link files and the first-boot
rename, run here against a sysfs tree of its own), a router's starting FRR configuration
(checked by FRR's own parser when vtysh is installed), the agent login's key, and the
domain XML with every link NIC."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from testbed.config import project_root
from testbed.hypervisor.addressing import plan_addresses
from testbed.hypervisor.frrconf import frr_config
from testbed.hypervisor.nodeprep import cloud_init_ethernets, interfaces_for, node_macs, seed_extras
from testbed.hypervisor.seed import FORWARD_NOW, RENAME_SCRIPT, InterfaceConfig, SeedSpec, networkd_unit, seed_files
from testbed.hypervisor.xml import DomainSpec, Nic, render_domain
from testbed.model.images import load_catalog
from testbed.model.topology import load_topology

ROOT = project_root()
CATALOG = load_catalog(ROOT / "images")
MACS = [f"52:54:00:00:00:{i:02x}" for i in range(1, 60)]


def lab(name: str):
    topo = load_topology(ROOT / "topologies" / f"{name}.yaml", images=CATALOG, default_image="debian-12")
    plan = plan_addresses(topo, "10.213.0.0/24", {})
    return topo, plan, node_macs(topo, plan, iter(MACS))


def seed_of(topo, plan, macs, node: str) -> dict[str, bytes]:
    image = CATALOG[topo.node(node).image]
    files, firstboot = seed_extras(topo, plan, node, image, "ssh-ed25519 AAAAC3Nz testbed-harness")
    spec = SeedSpec(
        hostname=node,
        authorized_keys=["ssh-ed25519 AAAAC3Nz testbed-harness"],
        host_key_private="PRIVATE",
        host_key_public="PUBLIC\n",
        interfaces=interfaces_for(topo, plan, node, image, macs[node]),
        hosts=plan.hosts_for(node),
        files=files,
        firstboot=firstboot,
    )
    return {path: content for path, (content, _mode) in seed_files(spec).items()}


def test_a_router_gets_link_files_its_frr_conf_and_the_agent_login_key() -> None:
    topo, plan, macs = lab("routers")
    files = seed_of(topo, plan, macs, "r1")
    r1 = macs["r1"]
    assert files["etc/systemd/network/10-testbed-eth1.link"].decode() == (
        f"[Match]\nPermanentMACAddress={r1['core']}\n\n[Link]\nName=eth1\n"
    )
    assert files["etc/testbed/ifnames"].decode() == f"{r1['core']} eth1\n{r1['lan1']} eth2\n"
    firstboot = files["etc/testbed/firstboot.sh"].decode()
    assert firstboot.startswith(RENAME_SCRIPT) and firstboot.endswith("chown frr:frr /etc/frr/frr.conf\n")
    assert files["etc/ssh/authorized_keys/admin"] == b"ssh-ed25519 AAAAC3Nz testbed-harness\n"
    conf = files["etc/frr/frr.conf"].decode()
    assert "interface eth1\n description core to r2:eth1\n ip address 10.0.12.1/30\nexit" in conf
    # the router's link addresses live in FRR's configuration; networkd only brings the NIC up
    core = next(p for p in files if p.endswith("-testbed-core.network"))
    assert "\nAddress=" not in files[core].decode() and "ConfigureWithoutCarrier=yes" in files[core].decode()
    assert "KeepConfiguration=static" in files[core].decode()  # FRR's addresses survive networkd


def test_a_host_on_links_gets_addresses_and_routes_from_networkd() -> None:
    topo, plan, macs = lab("routers")
    files = seed_of(topo, plan, macs, "h1")
    unit = next(v.decode() for p, v in files.items() if p.endswith("-testbed-lan1.network"))
    assert "Address=10.0.1.2/24" in unit
    assert "[Route]\nDestination=10.0.2.0/24\nGateway=10.0.1.1" in unit
    assert "etc/frr/frr.conf" not in files and "etc/ssh/authorized_keys/admin" not in files
    assert b"10.0.1.1\tr1" in files["etc/hosts"]


def test_a_forwarding_node_says_so_to_every_systemd_release_and_a_host_does_not() -> None:
    def seed(forward: bool) -> dict[str, bytes]:
        nics = [InterfaceConfig(MACS[i], f"10.0.{i}.1/24", forward=forward, name=f"seg{i}") for i in (1, 2)]
        spec = SeedSpec("router", ["ssh-ed25519 AAAAC3Nz k"], "PRIVATE", "PUBLIC\n", nics, {}, forward=forward)
        return {path: content for path, (content, _mode) in seed_files(spec).items()}

    files = seed(True)
    assert files["etc/sysctl.d/60-testbed-forward.conf"] == b"net.ipv4.ip_forward = 1\n"
    # systemd >= 256 (trixie) sets the global switch only from networkd.conf
    dropin = files["etc/systemd/networkd.conf.d/60-testbed-forward.conf"].decode()
    assert "[Network]\nIPv4Forwarding=yes\n" in dropin
    units = [v.decode() for p, v in files.items() if p.endswith(".network")]
    assert len(units) == 2 and all("IPForward=ipv4" in u for u in units)  # systemd <= 255
    # and at once on the first boot, which the sysctl.d file misses (the seed lands beside
    # systemd-sysctl), for a node with no .network file saying IPForward= too
    assert FORWARD_NOW in files["etc/testbed/firstboot.sh"].decode().splitlines()
    host = seed(False)
    assert "etc/testbed/firstboot.sh" not in host
    assert not any("forward" in p for p in host) and not any(b"IPForward" in v for v in host.values())


def test_unaddressed_links_are_only_brought_up() -> None:
    topo, plan, macs = lab("routers-brownfield")
    iface = next(i for i in interfaces_for(topo, plan, "r1", CATALOG["frr-router"], macs["r1"]) if i.name == "spare")
    assert iface.address is None and not iface.dhcp
    assert "DHCP" not in networkd_unit(0, iface)


BROWNFIELD_R1 = """frr defaults traditional
hostname r1
log syslog informational
service integrated-vtysh-config
!
interface eth1
 description core to r2:eth1, r3:eth1
 ip address 10.0.0.1/29
 ip ospf area 0
exit
!
interface eth2
 description spare to r3:eth2
exit
!
router ospf
 ospf router-id 10.255.0.1
exit
!
router bgp 65001
 bgp router-id 10.255.0.1
 no bgp ebgp-requires-policy
 neighbor 10.0.0.3 remote-as 65003
 !
 address-family ipv4 unicast
  network 10.0.5.0/24
 exit-address-family
exit
!
"""


def test_brownfield_configuration_in_frr_syntax() -> None:
    topo, plan, _ = lab("routers-brownfield")
    assert frr_config(topo, plan, topo.node("r1")) == BROWNFIELD_R1
    r2 = frr_config(topo, plan, topo.node("r2"))
    assert " ip ospf area 0" in r2.split("interface eth2")[1] and " passive-interface eth2" in r2
    r3 = frr_config(topo, plan, topo.node("r3"))
    assert "neighbor 10.0.0.1 remote-as 65001" in r3
    assert "ip ospf area" not in r3.split("interface eth2")[1]  # r3 runs OSPF on eth1 only


@pytest.mark.skipif(shutil.which("vtysh") is None, reason="FRR's vtysh is not installed (apt-get install frr)")
@pytest.mark.parametrize("node", ["r1", "r2", "r3"])
def test_frr_parses_the_rendered_configuration(tmp_path: Path, node: str) -> None:
    topo, plan, _ = lab("routers-brownfield")
    path = tmp_path / "frr.conf"
    path.write_text(frr_config(topo, plan, topo.node(node)))
    checked = subprocess.run(["vtysh", "-C", "-f", str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    path.write_text("interface eth1\n ip adress 10.0.0.1/29\nexit\n")  # and the check can fail
    assert subprocess.run(["vtysh", "-C", "-f", str(path)], capture_output=True, check=False).returncode != 0


def test_domain_xml_carries_every_link_nic_in_nic_order() -> None:
    _topo, plan, macs = lab("routers-brownfield")
    nics = [Nic("tb-x-mgmt", macs["r1"]["mgmt"])] + [
        Nic(f"tb-x-{i.network}", macs["r1"][i.network]) for i in plan.ifaces["r1"]
    ]
    xml = render_domain(
        DomainSpec(
            name="tb-x-r1",
            lab_name="x",
            node="r1",
            accel="qemu",
            memory_mb=512,
            vcpus=1,
            disk="/d.qcow2",
            console_log="/c.log",
            metadata_xml="<x/>",
            nics=nics,
        )
    )
    networks = [line.split("'")[1] for line in xml.splitlines() if "<source network=" in line]
    assert networks == ["tb-x-mgmt", "tb-x-core", "tb-x-spare"]
    assert xml.count("<interface type='network'>") == 3


def test_cloud_init_names_link_nics_too() -> None:
    topo, plan, macs = lab("routers")
    eths = cloud_init_ethernets(interfaces_for(topo, plan, "h1", CATALOG["debian-12"], macs["h1"]))
    assert list(eths) == ["eth0", "eth1"]
    assert eths["eth1"]["set-name"] == "eth1" and eths["eth1"]["addresses"] == ["10.0.1.2/24"]


def _fake_sysfs(root: Path, nics: dict[str, str]) -> None:
    for name, mac in nics.items():
        (root / name).mkdir(parents=True)
        (root / name / "address").write_text(mac + "\n")


FAKE_IP = """#!/bin/sh
# ip link set dev CUR down | ip link set dev CUR name NEW, on a directory tree: a rename to a
# name that exists fails as the kernel's does (EEXIST)
[ "$5" = down ] && exit 0
[ -e "$TESTBED_SYS_NET/$6" ] && { echo "RTNETLINK answers: File exists" >&2; exit 2; }
mv "$TESTBED_SYS_NET/$4" "$TESTBED_SYS_NET/$6"
"""


def _run_rename(tmp_path: Path, wanted: dict[str, str], late: dict[str, str] | None = None) -> Path:
    sysnet, bindir = tmp_path / "net", tmp_path / "bin"
    sysnet.mkdir(exist_ok=True)
    bindir.mkdir()
    (bindir / "ip").write_text(FAKE_IP)
    (bindir / "ip").chmod(0o755)
    ifnames = tmp_path / "ifnames"
    ifnames.write_text("".join(f"{mac} {name}\n" for mac, name in wanted.items()))
    env = {**os.environ, "TESTBED_SYS_NET": str(sysnet), "TESTBED_IFNAMES": str(ifnames)}
    env["TESTBED_PATH"] = f"{bindir}:/usr/bin:/bin"
    if late:
        threading.Timer(1.5, _fake_sysfs, (sysnet, late)).start()
    subprocess.run(["sh", "-c", RENAME_SCRIPT], env=env, check=True, timeout=20)
    return sysnet


def test_first_boot_renames_by_mac_whatever_the_kernel_called_them(tmp_path: Path) -> None:
    # the kernel named them in PCI order; the file wants other names (one a swap of ethN)
    _fake_sysfs(
        tmp_path / "net", {"eth0": "52:54:00:00:00:01", "eth1": "52:54:00:00:00:02", "eth2": "52:54:00:00:00:03"}
    )
    sysnet = _run_rename(tmp_path, {"52:54:00:00:00:02": "swp1", "52:54:00:00:00:03": "eth9"})
    assert sorted(p.name for p in sysnet.iterdir()) == ["eth0", "eth9", "swp1"]
    assert (sysnet / "swp1" / "address").read_text().strip() == "52:54:00:00:00:02"


def test_first_boot_waits_for_a_nic_still_being_probed(tmp_path: Path) -> None:
    _fake_sysfs(tmp_path / "net", {"eth0": "52:54:00:00:00:01"})
    t0 = time.monotonic()
    sysnet = _run_rename(tmp_path, {"52:54:00:00:00:02": "wan"}, late={"eth1": "52:54:00:00:00:02"})
    assert (sysnet / "wan").is_dir() and not (sysnet / "eth1").exists()
    assert time.monotonic() - t0 >= 1.5

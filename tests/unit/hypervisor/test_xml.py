"""Domain and network XML: rendered, parsed back and checked; metadata round-trips."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from testbed.config import METADATA_NS
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.xml import (
    DhcpHost,
    DomainSpec,
    LabMetadata,
    NetworkSpec,
    Nic,
    render_domain,
    render_network,
)

OWNER = Owner(pid=4242, starttime=99, host="labhost")
META = LabMetadata(
    "ab12c",
    "demo<&>",
    "/tmp/labs/ab12c",
    OWNER,
    "2026-01-01T00:00:00+00:00",
    run_id="0123456789abcdef",
    job_id="job1",
    node="web",
)


def domain_spec(**kw) -> DomainSpec:
    base = dict(
        name="tb-01234567-web",
        lab_name="demo",
        node="web",
        accel="qemu",
        memory_mb=640,
        vcpus=2,
        disk="/tmp/labs/ab12c/web.qcow2",
        console_log="/tmp/labs/ab12c/web.console.log",
        metadata_xml=META.to_xml(),
        nics=[Nic("tb-01234567-mgmt", "52:54:00:00:00:01"), Nic("tb-01234567-lan", "52:54:00:00:00:02")],
        kernel="/cache/vmlinuz",
        initrd="/cache/initrd.img",
        cmdline="root=/dev/vda console=ttyS0",
        fwcfg_files={"opt/testbed/seed": "/tmp/labs/ab12c/web.seed.tar"},
    )
    base.update(kw)
    return DomainSpec(**base)


def test_domain_xml_parses_and_carries_everything() -> None:
    root = ET.fromstring(render_domain(domain_spec()))
    assert root.get("type") == "qemu"
    assert root.findtext("name") == "tb-01234567-web"
    assert root.find("memory").text == "640" and root.find("memory").get("unit") == "MiB"
    assert root.findtext("vcpu") == "2"
    assert root.findtext("os/kernel") == "/cache/vmlinuz"
    assert root.findtext("os/cmdline") == "root=/dev/vda console=ttyS0"
    disk = root.find("devices/disk[@device='disk']")
    assert disk.find("source").get("file") == "/tmp/labs/ab12c/web.qcow2"
    assert disk.find("driver").get("type") == "qcow2"
    nics = root.findall("devices/interface")
    assert [(n.find("source").get("network"), n.find("mac").get("address")) for n in nics] == [
        ("tb-01234567-mgmt", "52:54:00:00:00:01"),
        ("tb-01234567-lan", "52:54:00:00:00:02"),
    ]
    entry = root.find("sysinfo[@type='fwcfg']/entry")
    assert entry.get("name") == "opt/testbed/seed"
    assert root.find("devices/serial/log").get("file").endswith("web.console.log")
    assert root.find("cpu") is None  # TCG: no host-passthrough
    meta = LabMetadata.from_xml(render_domain(domain_spec()))
    assert meta == META


def test_kvm_domain_uses_host_cpu_and_cdrom_seed() -> None:
    root = ET.fromstring(render_domain(domain_spec(accel="kvm", kernel=None, seed_iso="/x/seed.iso", fwcfg_files={})))
    assert root.get("type") == "kvm"
    assert root.find("cpu").get("mode") == "host-passthrough"
    assert root.find("os/kernel") is None
    assert root.find("sysinfo") is None
    cdrom = root.find("devices/disk[@device='cdrom']")
    assert cdrom.find("source").get("file") == "/x/seed.iso"


def test_metadata_escapes_hostile_names() -> None:
    xml = META.to_xml()
    el = ET.fromstring(xml)
    assert el.tag == f"{{{METADATA_NS}}}lab"
    assert el.get("lab-name") == "demo<&>"


def test_isolated_network_xml() -> None:
    mgmt = ET.fromstring(
        render_network(
            NetworkSpec(
                name="tb-x-mgmt",
                bridge="tbab12c-mgmt",
                metadata_xml=META.to_xml(),
                host_ip="10.213.0.1",
                prefix=24,
                dhcp_hosts=[DhcpHost("52:54:00:00:00:01", "web", "10.213.0.10")],
                dhcp_start="10.213.0.200",
                dhcp_end="10.213.0.254",
            )
        )
    )
    assert mgmt.find("forward") is None, "an isolated network has no <forward>"
    assert mgmt.find("bridge").get("name") == "tbab12c-mgmt"
    assert mgmt.find("ip").get("address") == "10.213.0.1"
    assert mgmt.find("ip/dhcp/host").get("ip") == "10.213.0.10"
    lan = ET.fromstring(render_network(NetworkSpec(name="tb-x-lan", bridge="tbab12c-lan", metadata_xml=META.to_xml())))
    assert lan.find("ip") is None and lan.find("forward") is None
    assert LabMetadata.from_xml(ET.tostring(lan, encoding="unicode")) is not None


def test_foreign_xml_has_no_metadata() -> None:
    assert LabMetadata.from_xml("<domain><name>other</name></domain>") is None
    assert LabMetadata.from_xml("not xml") is None

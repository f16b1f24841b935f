"""A domain's virtual hardware: CPU model per accelerator and x86-64 level, BIOS or UEFI
firmware with a per-domain NVRAM, and the emulator from libvirt's capabilities (parsed, and
read from libvirt's test driver)."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import libvirt
import pytest

from testbed.errors import HarnessError
from testbed.hypervisor.platform import HOST_PASSTHROUGH, CpuSpec, cpu_for, emulator_from_capabilities, find_emulator
from testbed.hypervisor.xml import render_domain
from tests.unit.hypervisor.test_xml import domain_spec

RHEL_CAPS = """<capabilities><host/>
  <guest><os_type>hvm</os_type>
    <arch name='x86_64'><wordsize>64</wordsize><emulator>/usr/libexec/qemu-kvm</emulator>
      <domain type='qemu'/><domain type='kvm'/></arch></guest>
</capabilities>"""
MIXED_CAPS = """<capabilities><host/>
  <guest><os_type>xen</os_type><arch name='x86_64'><emulator>/usr/bin/xen</emulator>
    <domain type='kvm'/></arch></guest>
  <guest><os_type>hvm</os_type><arch name='i686'><emulator>/usr/bin/qemu-system-i386</emulator>
    <domain type='qemu'/></arch></guest>
  <guest><os_type>hvm</os_type>
    <arch name='x86_64'><emulator>/usr/bin/qemu-system-x86_64</emulator>
      <domain type='qemu'/><domain type='kvm'><emulator>/usr/bin/kvm-spice</emulator></domain></arch></guest>
</capabilities>"""


def test_cpu_model_per_accelerator_and_level() -> None:
    assert cpu_for("kvm", "v3") == HOST_PASSTHROUGH
    assert cpu_for("qemu", "v1") is None, "TCG keeps QEMU's default model for plain x86-64"
    assert cpu_for("qemu", "v2") == CpuSpec("custom", "Nehalem")
    v3 = cpu_for("qemu", "v3")
    assert v3 is not None and v3.model == "Haswell-noTSX" and "x2apic" in v3.disabled
    with pytest.raises(HarnessError):
        cpu_for("qemu", "v4")


def test_tcg_domain_gets_the_named_model_for_its_level() -> None:
    root = ET.fromstring(render_domain(domain_spec(accel="qemu", cpu_level="v3")))
    cpu = root.find("cpu")
    assert cpu is not None and cpu.get("mode") == "custom" and cpu.get("check") == "none"
    assert cpu.findtext("model") == "Haswell-noTSX"
    assert {f.get("name") for f in cpu.findall("feature[@policy='disable']")} == {
        "pcid",
        "x2apic",
        "tsc-deadline",
        "invpcid",
    }
    assert ET.fromstring(render_domain(domain_spec(accel="qemu", cpu_level="v2"))).findtext("cpu/model") == "Nehalem"
    kvm = ET.fromstring(render_domain(domain_spec(accel="kvm", cpu_level="v3"))).find("cpu")
    assert kvm is not None and kvm.get("mode") == "host-passthrough" and kvm.find("model") is None


def test_bios_domain_boots_the_disk_through_the_default_firmware() -> None:
    root = ET.fromstring(render_domain(domain_spec(kernel=None, firmware="bios")))
    os_el = root.find("os")
    assert os_el is not None and os_el.get("firmware") is None
    assert os_el.find("nvram") is None and os_el.find("loader") is None
    assert os_el.find("boot").get("dev") == "hd"
    assert root.find("devices/disk[@device='disk']/boot") is None


def test_uefi_domain_gets_ovmf_and_its_own_nvram() -> None:
    spec = domain_spec(kernel=None, firmware="uefi", nvram="/labs/ab12c/web.VARS.fd")
    root = ET.fromstring(render_domain(spec))
    os_el = root.find("os")
    assert os_el is not None and os_el.get("firmware") == "efi"
    assert os_el.findtext("nvram") == "/labs/ab12c/web.VARS.fd"
    features = {f.get("name"): f.get("enabled") for f in os_el.findall("firmware/feature")}
    assert features == {"secure-boot": "no", "enrolled-keys": "no"}
    # OVMF ignores -boot order: the disk's own boot index keeps it from trying PXE first
    assert os_el.find("boot") is None
    assert root.find("devices/disk[@device='disk']/boot").get("order") == "1"


def test_emulator_is_rendered_only_when_known() -> None:
    assert ET.fromstring(render_domain(domain_spec())).find("devices/emulator") is None
    root = ET.fromstring(render_domain(domain_spec(emulator="/usr/libexec/qemu-kvm")))
    assert root.findtext("devices/emulator") == "/usr/libexec/qemu-kvm"


def test_emulator_from_capabilities() -> None:
    assert emulator_from_capabilities(RHEL_CAPS, "x86_64", "kvm") == "/usr/libexec/qemu-kvm"
    assert emulator_from_capabilities(RHEL_CAPS, "x86_64", "qemu") == "/usr/libexec/qemu-kvm"
    assert emulator_from_capabilities(MIXED_CAPS, "x86_64", "qemu") == "/usr/bin/qemu-system-x86_64"
    assert emulator_from_capabilities(MIXED_CAPS, "x86_64", "kvm") == "/usr/bin/kvm-spice"
    with pytest.raises(HarnessError, match="types offered: qemu, kvm"):
        emulator_from_capabilities(RHEL_CAPS, "x86_64", "test")
    with pytest.raises(HarnessError):
        emulator_from_capabilities("not xml", "x86_64", "kvm")


def test_emulator_from_the_test_driver() -> None:
    conn = libvirt.open("test:///default")
    try:
        assert find_emulator(conn, "test", arch="i686") == "/usr/bin/test-hv"
        with pytest.raises(HarnessError, match="no x86_64 emulator"):
            find_emulator(conn, "kvm")
    finally:
        conn.close()


@pytest.mark.parametrize(("firmware", "level"), [("bios", "v1"), ("uefi", "v3")])
def test_libvirt_parses_the_rendered_domain(firmware: str, level: str) -> None:
    spec = domain_spec(
        accel="test",
        kernel=None,
        firmware=firmware,
        nvram="/labs/ab12c/web.VARS.fd" if firmware == "uefi" else None,
        cpu_level=level,
        emulator="/usr/bin/test-hv",
        run_as_root=False,
    )
    conn = libvirt.open("test:///default")
    try:
        dom = conn.defineXML(render_domain(spec))
        back = ET.fromstring(dom.XMLDesc(0))
        dom.undefine()
    finally:
        conn.close()
    assert back.findtext("devices/emulator") == "/usr/bin/test-hv"
    if firmware == "uefi":
        assert back.find("os").get("firmware") == "efi"
        assert back.findtext("os/nvram") == "/labs/ab12c/web.VARS.fd"
        assert back.findtext("cpu/model") == "Haswell-noTSX"
    else:
        assert back.find("os").get("firmware") is None and back.find("cpu") is None


def test_accel_probe_finds_qemu_under_either_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from testbed.hypervisor import accel

    assert accel.qemu_binary() == shutil.which("qemu-system-x86_64")
    qemu_kvm = tmp_path / "qemu-kvm"
    qemu_kvm.write_text("#!/bin/sh\n")
    qemu_kvm.chmod(0o755)
    monkeypatch.setattr(accel, "RHEL_QEMU", str(qemu_kvm))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert accel.qemu_binary() == str(qemu_kvm)
    qemu_kvm.chmod(0o644)
    assert accel.qemu_binary() is None


def test_the_seed_is_a_virtio_disk_under_uefi_and_an_ide_cdrom_under_bios() -> None:
    """Under OVMF the guest kernel saw no drive behind the IDE controller, so cloud-init
    found no NoCloud seed (DataSourceNone, host keys of its own): UEFI guests get the seed
    as a read-only virtio disk; BIOS guests keep the IDE cdrom they boot with."""
    uefi = ET.fromstring(render_domain(domain_spec(kernel=None, firmware="uefi", seed_iso="/x/seed.iso")))
    (seed,) = [d for d in uefi.findall("devices/disk") if d.find("source").get("file") == "/x/seed.iso"]
    assert seed.get("device") == "disk" and seed.find("target").get("bus") == "virtio"
    assert seed.find("readonly") is not None and seed.find("boot") is None
    bios = ET.fromstring(render_domain(domain_spec(kernel=None, seed_iso="/x/seed.iso")))
    cdrom = bios.find("devices/disk[@device='cdrom']")
    assert cdrom.find("target").get("bus") == "ide" and cdrom.find("source").get("file") == "/x/seed.iso"

"""The virtual hardware a domain gets from its image: CPU model, firmware and emulator.

- CPU (`cpu_for`): under KVM the host CPU is passed through. Under TCG an image's
  `cpu_level` picks a named QEMU model that offers that x86-64 level: v1 keeps QEMU's
  default (qemu64), v2 is `Nehalem` (SSE4.2, POPCNT, CX16, LAHF), v3 is `Haswell-noTSX`
  (adds AVX2, BMI1/2, FMA, F16C, MOVBE, XSAVE) minus the four features QEMU 7.2's TCG cannot
  emulate (pcid, x2apic, tsc-deadline, invpcid; none is part of v3). Checked with QMP
  `query-cpu-definitions` under `-accel tcg` on QEMU 7.2: both models then have no
  unavailable feature. Named models rather than `max` keep a guest's CPU the same across
  QEMU versions.
- Firmware (`uefi` images): libvirt's firmware auto-selection (`<os firmware='efi'>`, with
  Secure Boot and enrolled keys off) picks OVMF from the lab host's firmware descriptors
  (/usr/share/qemu/firmware: OVMF_CODE_4M.fd from Debian's `ovmf` package; the edk2 files
  on RHEL hosts), and the NVRAM is a per-domain file in the lab's own files, which libvirt
  creates from the descriptor's variable-store template when the domain starts and which
  goes with the lab. A fresh NVRAM has no boot entries, so the firmware boots the disk's
  removable-media path (EFI/BOOT/BOOTX64.EFI), as images built here provide.
- Emulator (`find_emulator`): the `<emulator>` libvirt's capabilities give for x86_64 and
  the domain type (a `<domain>`'s own `<emulator>` first, else the architecture's), so RHEL
  hosts get /usr/libexec/qemu-kvm and Debian hosts /usr/bin/qemu-system-x86_64.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from testbed.errors import HarnessError


@dataclass(frozen=True)
class CpuSpec:
    """A domain's `<cpu>`: `host-passthrough`, or a `custom` named model."""

    mode: str
    model: str | None = None
    disabled: tuple[str, ...] = ()


HOST_PASSTHROUGH = CpuSpec("host-passthrough")
TCG_MODELS: dict[str, CpuSpec | None] = {
    "v1": None,
    "v2": CpuSpec("custom", "Nehalem"),
    "v3": CpuSpec("custom", "Haswell-noTSX", ("pcid", "x2apic", "tsc-deadline", "invpcid")),
}


def cpu_for(accel: str, level: str) -> CpuSpec | None:
    """The `<cpu>` of a domain of type `accel` ("kvm", "qemu" for TCG, "test") for an image
    needing x86-64 `level` (v1, v2, v3); None leaves QEMU's default model."""
    if accel == "kvm":
        return HOST_PASSTHROUGH
    try:
        return TCG_MODELS[level]
    except KeyError:
        raise HarnessError(f"unknown x86-64 level '{level}' (v1, v2 or v3)") from None


def emulator_from_capabilities(caps_xml: str, arch: str, domain_type: str) -> str:
    """The emulator for `arch` and `domain_type` in a libvirt capabilities document."""
    try:
        root = ET.fromstring(caps_xml)
    except ET.ParseError as exc:
        raise HarnessError(f"libvirt capabilities are not XML: {exc}") from exc
    offered: list[str] = []
    for guest in root.findall("guest"):
        arch_el = guest.find(f"arch[@name='{arch}']")
        if guest.findtext("os_type") != "hvm" or arch_el is None:
            continue
        for domain in arch_el.findall("domain"):
            offered.append(domain.get("type", "?"))
            if domain.get("type") == domain_type:
                emulator = domain.findtext("emulator") or arch_el.findtext("emulator")
                if emulator:
                    return emulator.strip()
    types = ", ".join(offered) or "none"
    raise HarnessError(
        f"libvirt offers no {arch} emulator for domain type '{domain_type}' (types offered: {types}); "
        "is QEMU installed on the lab host?"
    )


def find_emulator(conn: Any, domain_type: str, arch: str = "x86_64") -> str:
    """The emulator path of an open libvirt connection `conn` (blocking; see module
    docstring)."""
    import libvirt

    try:
        caps = conn.getCapabilities()
    except libvirt.libvirtError as exc:
        raise HarnessError(f"cannot read libvirt capabilities: {exc}") from exc
    return emulator_from_capabilities(caps, arch, domain_type)

"""Render libvirt domain and network XML from Jinja2 templates, and read our metadata back.

Every object carries a `<tb:lab>` element in the namespace `METADATA_NS` (owner, run id,
job id, lab id/name/dir, node, created-at), which is how the reaper finds orphans.

A domain's CPU model, firmware and emulator follow `testbed.hypervisor.platform`: `cpu` is
derived from the accelerator and the image's x86-64 level, `firmware: uefi` renders
`<os firmware='efi'>` (Secure Boot off) with the per-domain `nvram` file, and `emulator` is
the path from libvirt's capabilities (omitted when None: libvirt then picks its default).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import cache
from xml.sax.saxutils import quoteattr

import jinja2

from testbed.config import METADATA_NS
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.platform import CpuSpec, cpu_for


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("testbed.hypervisor", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("j2", "xml"), default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


@dataclass(frozen=True)
class LabMetadata:
    """Ownership record written into every domain and network of a lab."""

    lab_id: str
    lab_name: str
    lab_dir: str
    owner: Owner
    created_at: str
    run_id: str | None = None
    job_id: str | None = None
    node: str | None = None

    def to_xml(self) -> str:
        o = self.owner
        attrs = {
            "lab-id": self.lab_id,
            "lab-name": self.lab_name,
            "lab-dir": self.lab_dir,
            "created-at": self.created_at,
            "run-id": self.run_id or "",
            "job-id": self.job_id or "",
            "node": self.node or "",
        }
        lab_attrs = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items())
        owner_attrs = (
            f"pid='{o.pid}' starttime='{o.starttime}' host={quoteattr(o.host)} "
            f"detached='{'yes' if o.detached else 'no'}' lock={quoteattr(o.lock)}"
        )
        return f"<tb:lab xmlns:tb='{METADATA_NS}' {lab_attrs}><tb:owner {owner_attrs}/></tb:lab>"

    @classmethod
    def from_xml(cls, text: str) -> LabMetadata | None:
        """Parse our metadata out of a whole domain/network XML or the bare element."""
        try:
            root = ET.fromstring(text)
        except ET.ParseError:
            return None
        tag = f"{{{METADATA_NS}}}lab"
        lab = root if root.tag == tag else root.find(f".//{tag}")
        if lab is None:
            return None
        owner_el = lab.find(f"{{{METADATA_NS}}}owner")
        if owner_el is None:
            return None
        owner = Owner(
            pid=int(owner_el.get("pid", "0")),
            starttime=int(owner_el.get("starttime", "0")),
            host=owner_el.get("host", ""),
            detached=owner_el.get("detached") == "yes",
            lock=owner_el.get("lock", ""),
        )
        return cls(
            lab_id=lab.get("lab-id", ""),
            lab_name=lab.get("lab-name", ""),
            lab_dir=lab.get("lab-dir", ""),
            owner=owner,
            created_at=lab.get("created-at", ""),
            run_id=lab.get("run-id") or None,
            job_id=lab.get("job-id") or None,
            node=lab.get("node") or None,
        )


@dataclass(frozen=True)
class Nic:
    network: str
    mac: str


@dataclass(frozen=True)
class DomainSpec:
    name: str
    lab_name: str
    node: str
    accel: str
    memory_mb: int
    vcpus: int
    disk: str
    console_log: str
    metadata_xml: str
    nics: list[Nic]
    emulator: str | None = None
    firmware: str = "bios"  # bios | uefi
    nvram: str | None = None  # uefi: this domain's variable store (made from the template)
    cpu_level: str = "v1"
    kernel: str | None = None
    initrd: str | None = None
    cmdline: str = ""
    seed_iso: str | None = None
    fwcfg_files: dict[str, str] = field(default_factory=dict)
    disk_bus: str = "virtio"
    nic_model: str = "virtio"
    run_as_root: bool = True
    guest_agent: bool = True  # a virtio-serial port for qemu-guest-agent: the out-of-band channel

    @property
    def cpu(self) -> CpuSpec | None:
        return cpu_for(self.accel, self.cpu_level)


@dataclass(frozen=True)
class DhcpHost:
    mac: str
    name: str
    ip: str


@dataclass(frozen=True)
class NetworkSpec:
    """A transient isolated network: no `<forward>`, so libvirt routes nothing off-bridge.

    With `host_ip` the host gets an address on the bridge (the management network); without
    it the network is a bare L2 segment (data networks).
    """

    name: str
    bridge: str
    metadata_xml: str
    host_ip: str | None = None
    prefix: int = 24
    dhcp_hosts: list[DhcpHost] = field(default_factory=list)
    dhcp_start: str | None = None
    dhcp_end: str | None = None


def render_domain(spec: DomainSpec) -> str:
    return _env().get_template("domain.xml.j2").render(d=spec)


def render_network(spec: NetworkSpec) -> str:
    return _env().get_template("network.xml.j2").render(n=spec)

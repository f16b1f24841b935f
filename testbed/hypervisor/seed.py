"""testbed's own per-node seed: a tar of files passed to the guest through QEMU fw_cfg.

The image's `testbed-seed.service` unpacks it over `/` early at boot (once per distinct
seed). It carries the hostname, /etc/hosts (so lab nodes resolve each other by name on
their data segments), the SSH host key the harness pins, root's authorized_keys, and
systemd-networkd files that match NICs by MAC (static addresses, routes, forwarding).
"""

from __future__ import annotations

import io
import ipaddress
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

FWCFG_NAME = "opt/testbed/seed"


@dataclass(frozen=True)
class InterfaceConfig:
    mac: str
    address: str | None  # CIDR, e.g. 10.213.0.10/24; None for DHCP
    gateway: str | None = None
    routes: list[tuple[str, str]] = field(default_factory=list)  # (destination CIDR, gateway)
    forward: bool = False
    name: str = ""


@dataclass(frozen=True)
class SeedSpec:
    hostname: str
    authorized_keys: list[str]
    host_key_private: str  # OpenSSH private key text (ed25519)
    host_key_public: str
    interfaces: list[InterfaceConfig]
    hosts: dict[str, str]  # name -> address, written to /etc/hosts
    forward: bool = False


def networkd_unit(index: int, iface: InterfaceConfig) -> str:
    """A systemd-networkd .network file for one NIC, matched by MAC."""
    lines = ["[Match]", f"MACAddress={iface.mac}", "", "[Network]"]
    if iface.address:
        lines.append(f"Address={iface.address}")
    else:
        lines.append("DHCP=ipv4")
    lines.append("LinkLocalAddressing=no")
    lines.append("IPv6AcceptRA=no")
    if iface.forward:
        lines.append("IPForward=ipv4")
    for dest, gateway in iface.routes:
        lines += ["", "[Route]", f"Destination={dest}", f"Gateway={gateway}"]
    return "\n".join(lines) + "\n"


def hosts_file(hostname: str, hosts: dict[str, str]) -> str:
    lines = ["127.0.0.1\tlocalhost", f"127.0.1.1\t{hostname}", "::1\tlocalhost ip6-localhost ip6-loopback"]
    for name, addr in sorted(hosts.items()):
        ipaddress.IPv4Address(addr)
        lines.append(f"{addr}\t{name}")
    return "\n".join(lines) + "\n"


def seed_files(spec: SeedSpec) -> dict[str, tuple[bytes, int]]:
    """Path (relative to /) -> (content, mode) of everything the seed writes."""
    files: dict[str, tuple[bytes, int]] = {
        "etc/hostname": (f"{spec.hostname}\n".encode(), 0o644),
        "etc/hosts": (hosts_file(spec.hostname, spec.hosts).encode(), 0o644),
        "etc/ssh/ssh_host_ed25519_key": (spec.host_key_private.encode(), 0o600),
        "etc/ssh/ssh_host_ed25519_key.pub": (spec.host_key_public.encode(), 0o644),
        "root/.ssh/authorized_keys": ("\n".join(spec.authorized_keys).encode() + b"\n", 0o600),
    }
    for index, iface in enumerate(spec.interfaces):
        files[f"etc/systemd/network/{10 + index}-testbed-{iface.name or index}.network"] = (
            networkd_unit(index, iface).encode(),
            0o644,
        )
    if spec.forward:
        files["etc/sysctl.d/60-testbed-forward.conf"] = (b"net.ipv4.ip_forward = 1\n", 0o644)
    return files


def build_seed_tar(spec: SeedSpec) -> bytes:
    """The tar archive the guest unpacks; directories are created root-owned."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        dirs: set[str] = set()
        for path in seed_files(spec):
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        for directory in sorted(dirs):
            info = tarfile.TarInfo(directory)
            info.type = tarfile.DIRTYPE
            info.mode = 0o700 if directory == "root/.ssh" else 0o755
            tar.addfile(info)
        for path, (content, mode) in sorted(seed_files(spec).items()):
            info = tarfile.TarInfo(path)
            info.size = len(content)
            info.mode = mode
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def write_seed(spec: SeedSpec, dest: Path) -> Path:
    dest.write_bytes(build_seed_tar(spec))
    return dest

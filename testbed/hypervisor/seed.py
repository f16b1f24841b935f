"""testbed's own per-node seed: a tar of files passed to the guest through QEMU fw_cfg.

The image's `testbed-seed.service` unpacks it over `/` early at boot (once per distinct
seed). It carries the hostname, /etc/hosts (so lab nodes resolve each other by name on
their data segments), the SSH host key the harness pins, root's authorized_keys, and
systemd-networkd files that match NICs by MAC (static addresses, routes, forwarding; a
NIC with no address and `dhcp` False is only brought up).

Interface names (links: the names written in the topology): a `.link` file per named NIC
(`[Match] PermanentMACAddress=`, `[Link] Name=`) names it at every boot through udev, and
on the first boot — when the seed is unpacked after udev may already have seen the NICs —
`/etc/testbed/firstboot.sh` (which testbed-seed runs right after unpacking a new seed,
before systemd-networkd starts) renames each NIC found by MAC in `/etc/testbed/ifnames`
(`MAC NAME` lines), waiting up to 30 s for NICs still being probed; on ifupdown images it
then rewrites the interfaces.d stanzas under the new names. The NIC order of the domain
(`testbed.hypervisor.addressing.nic_order`) makes every rename collision-free.

Forwarding (`forward`) is said three ways, because releases read it differently: a
sysctl.d file (systemd-sysctl and the OpenRC/ifupdown seed apply it); `IPForward=ipv4` in
each .network file, which sets the global switch up to systemd 255 (bookworm, bullseye);
and `IPv4Forwarding=yes` in a networkd.conf.d drop-in, the global switch since systemd 256
(trixie), where `IPForward=` no longer sets it (older networkd warns about the unknown key
and ignores it). The sysctl.d file alone is not enough on a first boot: the seed is
unpacked beside systemd-sysctl, not before it, so the first boot's firstboot.sh also runs
`FORWARD_NOW` (a forwarding node whose only NIC is the management one has no .network file
saying `IPForward=`: on bullseye and bookworm it did not forward until its first reboot).

`files` adds further files (a router's starting configuration, another login's
authorized_keys); `firstboot` adds shell lines run after the renames (ownership of those
files, for instance).
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
    ifname: str | None = None  # the name the guest must give this NIC (None: the kernel's)
    dhcp: bool = True  # without an address: DHCP, or (False) only bring the link up


@dataclass(frozen=True)
class SeedSpec:
    hostname: str
    authorized_keys: list[str]
    host_key_private: str  # OpenSSH private key text (ed25519)
    host_key_public: str
    interfaces: list[InterfaceConfig]
    hosts: dict[str, str]  # name -> address, written to /etc/hosts
    forward: bool = False
    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)  # path (relative) -> (content, mode)
    firstboot: list[str] = field(default_factory=list)


def networkd_unit(index: int, iface: InterfaceConfig) -> str:
    """A systemd-networkd .network file for one NIC, matched by MAC."""
    lines = ["[Match]", f"MACAddress={iface.mac}", "", "[Network]"]
    if iface.address:
        lines.append(f"Address={iface.address}")
    elif iface.dhcp:
        lines.append("DHCP=ipv4")
    else:
        # brought up only: its addresses and routes are someone else's (FRR on a router, the
        # agent), and networkd must not drop them when it (re)configures the link, as it
        # does by default with "foreign" configuration (a router lost its link addresses
        # at a reboot when networkd configured the link after FRR had set them)
        lines += ["ConfigureWithoutCarrier=yes", "KeepConfiguration=static"]
    lines.append("LinkLocalAddressing=no")
    lines.append("IPv6AcceptRA=no")
    if iface.forward:
        lines.append("IPForward=ipv4")
    for dest, gateway in iface.routes:
        lines += ["", "[Route]", f"Destination={dest}", f"Gateway={gateway}"]
    return "\n".join(lines) + "\n"


def link_unit(iface: InterfaceConfig) -> str:
    """A systemd .link file that names one NIC by its permanent MAC (see module docstring)."""
    return f"[Match]\nPermanentMACAddress={iface.mac}\n\n[Link]\nName={iface.ifname}\n"


RENAME_SCRIPT = r"""#!/bin/sh
# written by testbed: give the NICs listed in /etc/testbed/ifnames (MAC NAME) their names
# now; udev does it from /etc/systemd/network/*-testbed-*.link at later boots.
# (TESTBED_PATH, TESTBED_SYS_NET and TESTBED_IFNAMES: tests run it against a tree of their own.)
PATH=${TESTBED_PATH:-/usr/sbin:/usr/bin:/sbin:/bin}
sysnet=${TESTBED_SYS_NET:-/sys/class/net}
ifnames=${TESTBED_IFNAMES:-/etc/testbed/ifnames}
tries=0
while :; do
    pending=0
    while read -r mac name; do
        [ -n "$mac" ] || continue
        cur=
        for dev in "$sysnet"/*; do
            [ "$(cat "$dev/address" 2>/dev/null)" = "$mac" ] && cur=${dev##*/}
        done
        if [ -z "$cur" ]; then
            pending=1
        elif [ "$cur" != "$name" ]; then
            ip link set dev "$cur" down 2>/dev/null
            ip link set dev "$cur" name "$name" 2>/dev/null || pending=1
        fi
    done < "$ifnames"
    [ "$pending" = 0 ] && break
    tries=$((tries + 1))
    if [ "$tries" -ge 30 ]; then
        echo "testbed firstboot: not every NIC of /etc/testbed/ifnames could be named" >&2
        break
    fi
    sleep 1
done
if [ -x /usr/local/sbin/testbed-seed-ifupdown ]; then
    rm -f /etc/network/interfaces.d/testbed-*
    /usr/local/sbin/testbed-seed-ifupdown
fi
"""


FORWARD_NOW = "sysctl -w net.ipv4.ip_forward=1"
"""What switches a forwarding node's forwarding on at once, on its first boot (fw_cfg seed's
firstboot.sh, cloud-init's bootcmd); later boots read the sysctl.d file."""


def firstboot_script(spec: SeedSpec) -> str | None:
    """`/etc/testbed/firstboot.sh`: the renames (when a NIC is named), `FORWARD_NOW` on a
    forwarding node, then `firstboot`."""
    named = [i for i in spec.interfaces if i.ifname]
    lines = ([FORWARD_NOW] if spec.forward else []) + spec.firstboot
    if not named and not lines:
        return None
    text = RENAME_SCRIPT if named else "#!/bin/sh\n# written by testbed\n"
    return text + "".join(f"{line}\n" for line in lines)


def hosts_file(hostname: str, hosts: dict[str, str]) -> str:
    lines = ["127.0.0.1\tlocalhost", f"127.0.1.1\t{hostname}", "::1\tlocalhost ip6-localhost ip6-loopback"]
    for name, addr in sorted(hosts.items()):
        ipaddress.IPv4Address(addr)
        lines.append(f"{addr}\t{name}")
    return "\n".join(lines) + "\n"


def forward_files() -> dict[str, tuple[bytes, int]]:
    """The files that make a node forward at every boot, on every systemd release (see the
    module docstring); the cloud-init seed writes the same ones."""
    return {
        "etc/sysctl.d/60-testbed-forward.conf": (b"net.ipv4.ip_forward = 1\n", 0o644),
        "etc/systemd/networkd.conf.d/60-testbed-forward.conf": (
            b"# written by testbed: the node forwards (systemd >= 256 reads this)\n[Network]\nIPv4Forwarding=yes\n",
            0o644,
        ),
    }


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
    named = [i for i in spec.interfaces if i.ifname]
    for iface in named:
        files[f"etc/systemd/network/10-testbed-{iface.ifname}.link"] = (link_unit(iface).encode(), 0o644)
    if named:
        lines = "".join(f"{i.mac.lower()} {i.ifname}\n" for i in named)
        files["etc/testbed/ifnames"] = (lines.encode(), 0o644)
    script = firstboot_script(spec)
    if script is not None:
        files["etc/testbed/firstboot.sh"] = (script.encode(), 0o755)
    if spec.forward:
        files.update(forward_files())
    files.update(spec.files)
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

"""The host guard: guests may not reach the lab host's own services.

A lab's management network gives the host an address on the lab's bridge so that the
harness can SSH into the guests. Without a guard, a guest could use that address to reach
every service the host listens on (a database, the dashboard, the environment API, sshd).
A guest may reach no lab-host service other than what the run is meant to reach
(docs/design.md, "Naming and isolation"), so before a lab's networks are created the host gets one nftables table,
`inet testbed_guard`, whose input chain, for packets arriving on any testbed bridge
(interface names `tb*`, see `labnetworks.bridge_name`):

- accepts replies to connections the host opened (`ct state established,related`: the
  harness's SSH sessions and their ICMP errors);
- accepts DHCP requests (udp 67: cloud-init images take their address from libvirt's
  dnsmasq);
- accepts new TCP connections to exactly the ports in `allow_tcp_ports` (by default
  `EGRESS_PORT`, where a lab with egress finds its proxy: `testbed.egress`), only to the
  address of the bridge they arrive on (`fib daddr . iif type local`: the management
  bridge's; data segments carry no host address); on a lab without egress nothing listens
  there. (nftables matches interface names by prefix only — `tb*-mgmt` would be a literal
  name — so the bridge is told by its address, not by its name's suffix);
- drops everything else (new TCP/UDP connections, pings, DNS).

Forwarding between bridges is not this table's job: isolated libvirt networks (no
`<forward>`) already reject it. The table is replaced atomically on every call (idempotent,
safe when several labs start at once), applies to every present and future testbed
bridge, and is left in place when labs go away: it matches nothing without `tb*` bridges.

On a local URI it is installed with the local `nft`; on a remote lab host the same ruleset
is fed to `nft -f -` on that host over the coordinator's SSH connection to it
(`testbed.hypervisor.hostlink.HostLink`, as the login user of the URI, which must be root
or hold CAP_NET_ADMIN there). `TESTBED_HOST_GUARD=0` disables it, for hosts whose firewall
is managed otherwise; the default is on.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from testbed.config import host_guard_enabled
from testbed.errors import HarnessError

if TYPE_CHECKING:
    from testbed.hypervisor.hostlink import HostLink

TABLE = "testbed_guard"
BRIDGE_PATTERN = "tb*"

EGRESS_PORT = 3127
"""The TCP port of the egress proxy on each management bridge address (reserved for it)."""
DEFAULT_ALLOWED_PORTS: tuple[int, ...] = (EGRESS_PORT,)


def ruleset(allow_tcp_ports: Sequence[int] = ()) -> str:
    """The guard table's ruleset, admitting new TCP connections to `allow_tcp_ports` on
    each management bridge's own address. The table is shared by every lab on the host and
    replaced whole: every caller on a host must pass the same ports."""
    ports = sorted(set(allow_tcp_ports))
    for port in ports:
        if not 0 < port < 65536:
            raise ValueError(f"not a TCP port: {port}")
    admit = ""
    if ports:
        listed = ", ".join(str(p) for p in ports)
        admit = (
            f'        iifname "{BRIDGE_PATTERN}" fib daddr . iif type local '
            f"tcp dport {{ {listed} }} ct state new accept\n"
        )
    return f"""\
table inet {TABLE} {{}}
delete table inet {TABLE}
table inet {TABLE} {{
    chain input {{
        type filter hook input priority -10; policy accept;
        iifname "{BRIDGE_PATTERN}" ct state established,related accept
        iifname "{BRIDGE_PATTERN}" udp dport 67 accept
{admit}        iifname "{BRIDGE_PATTERN}" counter drop
    }}
}}
"""


RULESET = ruleset(DEFAULT_ALLOWED_PORTS)
"""The ruleset `ensure_host_guard` installs by default."""


def uri_is_local(uri: str) -> bool:
    """True for `qemu:///system`-style URIs (no host part)."""
    return not urlsplit(uri).netloc


def guard_enabled() -> bool:
    return host_guard_enabled()


_FIX = "or set TESTBED_HOST_GUARD=0 if the host firewall already blocks input from tb* bridges"


async def ensure_host_guard(
    libvirt_uri: str, link: HostLink | None = None, *, allow_tcp_ports: Sequence[int] = DEFAULT_ALLOWED_PORTS
) -> str:
    """Install (or atomically replace) the guard table on the URI's host; returns what was
    done. A remote URI needs `link`, the SSH connection to that host. `allow_tcp_ports`:
    see `ruleset`.

    Raises HarnessError, with the fix, when it should apply but cannot be installed: a lab
    must not come up with its guests able to reach the host's services.
    """
    if not guard_enabled():
        return "disabled by TESTBED_HOST_GUARD=0"
    rules = ruleset(allow_tcp_ports).encode()
    if not uri_is_local(libvirt_uri):
        if link is None:
            raise HarnessError(f"host guard: no SSH link to the remote host of {libvirt_uri}")
        status, _out, remote_err = await link.run("nft -f -", stdin=rules)
        if status != 0:
            raise HarnessError(
                f"cannot install the host guard on {link.target} (nft -f - exited {status}: {remote_err.strip()}); "
                f"install nftables there and log in as root, {_FIX}"
            )
        return f"nftables table inet {TABLE} in place on {link.target}"
    nft = shutil.which("nft") or next((p for p in ("/usr/sbin/nft", "/sbin/nft") if os.path.exists(p)), None)
    if nft is None:
        raise HarnessError(
            "nft not found: the host guard that keeps guests away from the host's services needs it; "
            "install it (`apt-get install nftables`) or set TESTBED_HOST_GUARD=0 if the host firewall "
            "already blocks input from tb* bridges"
        )
    proc = await asyncio.create_subprocess_exec(
        nft,
        "-f",
        "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate(rules)
    if proc.returncode != 0:
        raise HarnessError(
            f"cannot install the host guard (nftables table inet {TABLE}): {err.decode(errors='replace').strip()}; "
            f"run as root (CAP_NET_ADMIN) {_FIX}"
        )
    return f"nftables table inet {TABLE} in place"

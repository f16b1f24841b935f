"""The console bootstrap of a console-managed device (`ImageDef.console_managed`).

For images with no SSH until configured (VyOS, OpenWrt, OPNsense, SONiC-VS; here the
`frr-router-console` variant): once the console shows the readiness prompt, testbed opens
the serial console (`testbed.hypervisor.console`), logs in (`ConsoleSession.login`),
takes the `enter` steps to the device's shell, pushes the `bootstrap` steps in the device's
own syntax with the node's values filled in (`bootstrap_values`), then either reads the SSH
host key the device now has (`host_key`) — which the harness pins before it goes on over
SSH — or, for a device whose SSH cannot be enabled (`ssh: false`), keeps the console as the
node's command channel (`testbed.guest.consolexec.ConsoleChannel`).

Contract: `console_bootstrap` returns a `Bootstrapped` (the pinned key line, or the console
channel); any failure is a `HarnessError` saying which step and what the console showed
(a step marked `secret` is never shown).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from testbed.errors import HarnessError
from testbed.guest.console import ConsoleSession, ConsoleStream
from testbed.guest.consolexec import ConsoleChannel
from testbed.model.device import ConsoleSpec, ConsoleStep

_HOST_KEYS = (
    re.compile(r"\b(ssh-ed25519 [A-Za-z0-9+/]{60,}=*)"),
    re.compile(r"\b(ecdsa-sha2-nistp(?:256|384|521) [A-Za-z0-9+/]{60,}=*)"),
    re.compile(r"\b(ssh-rsa [A-Za-z0-9+/]{200,}=*)"),
)


@dataclass(frozen=True)
class Bootstrapped:
    host_key: str | None
    channel: ConsoleChannel | None


def bootstrap_values(
    *, hostname: str, mgmt_ip: str, mgmt_subnet: ipaddress.IPv4Network, mgmt_mac: str, host_ip: str, public_key: str
) -> dict[str, str]:
    """The template fields of `testbed.model.device.TEMPLATE_FIELDS` for one node."""
    key_type, key_body = public_key.split()[:2]
    return {
        "hostname": hostname,
        "mgmt_ip": mgmt_ip,
        "mgmt_prefix": str(mgmt_subnet.prefixlen),
        "mgmt_cidr": f"{mgmt_ip}/{mgmt_subnet.prefixlen}",
        "mgmt_netmask": str(mgmt_subnet.netmask),
        "mgmt_mac": mgmt_mac.lower(),
        "host_ip": host_ip,
        "authorized_key": public_key,
        "key_type": key_type,
        "key_body": key_body,
    }


def host_key_in(text: str) -> str | None:
    """The first SSH public key line in `text` (ed25519 preferred)."""
    for pattern in _HOST_KEYS:
        found = pattern.search(text)
        if found:
            return found.group(1)
    return None


async def console_bootstrap(
    stream: ConsoleStream, spec: ConsoleSpec, values: dict[str, str], name: str
) -> Bootstrapped:
    """See module docstring; `stream` is closed unless it becomes the node's channel."""
    session = ConsoleSession(stream, name)
    try:
        await session.login(spec)
        for step in [*spec.enter, *spec.bootstrap]:
            await session.step(step, values, spec.prompt)
        if not spec.ssh:
            channel = ConsoleChannel(session, spec.work_dir)
            await channel.prepare()
            return Bootstrapped(None, channel)
        assert spec.host_key is not None  # ConsoleSpec's validator
        shown = await session.step(
            ConsoleStep(send=spec.host_key.replace("{", "{{").replace("}", "}}")), {}, spec.prompt
        )
        key = host_key_in(shown)
        if key is None:
            raise HarnessError(f"{name}: `{spec.host_key}` printed no SSH host key; console: {shown[-300:]!r}")
        await session.close()
        return Bootstrapped(key, None)
    except BaseException:
        await session.close()
        raise

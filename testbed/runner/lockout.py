"""When SSH to a node is lost during or right after the agent phase: who cut it?

The outcome rule: an agent's own mistake is `failed`, a fault outside the guest is
`error`. `diagnose` decides with what the agent cannot cut by mistake — libvirt's domain
state and stop reason (and the lifecycle event it sent), the QEMU guest agent over its
virtio-serial port, and the serial console log — and returns an `AccessLoss`:

- SSH answers again (a transient drop, the harness under load): `recovered`; the run goes on.
- The domain is gone or shut off and libvirt says it was destroyed, crashed (QEMU died) or
  failed: outside the guest → not the agent's (the run ends `error`).
- The guest powered itself off, its kernel panicked (pvpanic, or "Kernel panic" on the
  console), it was switched to rescue/emergency mode, sshd is gone, the management link is
  down or lost its address, or the harness's SSH is filtered while sshd listens: the agent
  caused it (`agent_caused`), with the reason and the evidence (which probe showed it).
- A session that never became ready after a restore (`SessionNotReady`: no agent command
  ran before it): outside the guest → not the agent's, whatever the guest looks like.
- The guest still runs but answers neither SSH nor its guest agent, and the console shows
  nothing else: the agent's (the host side is what the harness controls and it is intact).
`oob_usable` says whether the guest agent answers, so verification and the after_agent
snapshot can still run through it.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import Any

from testbed.errors import AgentFailure, HarnessError
from testbed.guest.ssh import SessionNotReady
from testbed.hypervisor.guestagent import GuestAgentUnavailable
from testbed.hypervisor.lab import LabNode
from testbed.runner.reboot import console_tail

LOCKOUT = "agent cut management access"
RECONNECT_TIMEOUT_S = 10.0
SETTLE_S = 60.0
SETTLE_POLL_S = 3.0

DIAGNOSE = r"""
echo "sshd: $(pgrep -x sshd >/dev/null 2>&1 && echo running || echo stopped)"
echo "listen22: $(ss -Hltn 2>/dev/null | awk '$4 ~ /:22$/' | wc -l)"
echo "targets: $(systemctl list-units --type=target --state=active --no-legend --plain 2>/dev/null \
  | awk '{print $1}' | tr '\n' ' ')"
echo '--- links'; ip -o link show 2>/dev/null
echo '--- addresses'; ip -o -4 addr show 2>/dev/null
echo '--- nft'; nft list ruleset 2>/dev/null | head -n 200
echo '--- iptables'; iptables-save 2>/dev/null | head -n 100
"""


@dataclass(frozen=True)
class AccessLoss:
    """What `diagnose` found out about one node; see module docstring."""

    node: str
    agent_caused: bool
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)
    oob_usable: bool = False
    recovered: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "reason": self.reason, "oob_usable": self.oob_usable, "evidence": self.evidence}


class AccessLost(AgentFailure):
    """The agent cut the harness off a node (carries the diagnosis)."""

    def __init__(self, loss: AccessLoss) -> None:
        super().__init__(loss.reason)
        self.loss = loss


_CONSOLE_SIGNS = (
    (re.compile(r"Kernel panic - not syncing[^\n]*"), "the guest kernel panicked"),
    (re.compile(r"You are in (rescue|emergency) mode[^\n]*"), "the system was switched to rescue/emergency mode"),
    (re.compile(r"reboot: Power down"), "the guest powered itself off"),
)


def _from_console(tail: str) -> tuple[str, str] | None:
    """(reason, the console line that shows it) when the console tells."""
    for pattern, reason in _CONSOLE_SIGNS:
        found = list(pattern.finditer(tail))
        if found:
            return reason, found[-1].group(0)
    return None


def _agent(node: LabNode, reason: str, evidence: dict[str, Any], oob: bool = False) -> AccessLoss:
    return AccessLoss(node.name, True, f"{LOCKOUT}: {node.name}: {reason}", evidence, oob_usable=oob)


async def diagnose(node: LabNode, fault: HarnessError, *, settle_s: float = SETTLE_S) -> AccessLoss:
    """See module docstring. Raises `HarnessError` only when libvirt itself fails.

    A guest that still runs but answers nothing may be on its way somewhere (powering off,
    rebooting, panicking): it is watched for up to `settle_s` seconds — its domain state,
    its console and SSH — before it is judged silent."""
    evidence: dict[str, Any] = {"fault": str(fault)}
    if node.hypervisor is None or isinstance(fault, SessionNotReady):
        return AccessLoss(node.name, False, f"{node.name}: {fault}", evidence)  # cannot be the agent's
    deadline = time.monotonic() + settle_s
    while True:
        stopped = await _stopped(node, evidence)
        if stopped is not None:
            return stopped
        if await _ssh_answers(node):
            why = f"{node.name}: SSH dropped and answered again"
            return AccessLoss(node.name, False, why, evidence, recovered=True)
        if node.oob is not None and await node.oob.ping():
            return await _probe_inside(node, evidence)
        evidence["guest_agent"] = "no answer"
        console = _from_console(console_tail(node, 4000))
        if console is not None:
            evidence["console_line"] = console[1]
            return _agent(node, f"{console[0]} (console: {console[1]!r})", evidence)
        if time.monotonic() >= deadline:
            return _agent(node, "the guest runs but answers neither SSH nor its guest agent", evidence)
        await asyncio.sleep(SETTLE_POLL_S)


async def _stopped(node: LabNode, evidence: dict[str, Any]) -> AccessLoss | None:
    """The verdict when the domain is no longer running (None while it runs)."""
    assert node.hypervisor is not None
    status = await node.hypervisor.domain_status(node.domain)
    stop = status.stop.kind if status.stop is not None else None
    evidence["domain"] = {"state": status.state, "reason": status.reason, "last_stop_event": stop}
    tail = console_tail(node, 4000)
    evidence["console_tail"] = tail[-1500:]
    if status.state == "crashed" or stop == "panicked":
        return _agent(node, "the guest kernel panicked (libvirt: crashed, panicked)", evidence)
    if status.state not in ("missing", "shutoff"):
        return None
    how = status.reason or stop
    if how == "shutdown":
        return _agent(node, "the guest powered itself off (libvirt: shutdown by the guest)", evidence)
    console = _from_console(tail)
    if how is None and console is not None:
        evidence["console_line"] = console[1]
        return _agent(node, f"{console[0]} (console: {console[1]!r})", evidence)
    return AccessLoss(node.name, False, f"{node.name}: guest stopped from outside ({how or 'unknown'})", evidence)


async def _ssh_answers(node: LabNode) -> bool:
    await node.session.close()
    try:
        await node.session.connect(timeout=RECONNECT_TIMEOUT_S)
    except HarnessError:
        return False
    return True


async def _probe_inside(node: LabNode, evidence: dict[str, Any]) -> AccessLoss:
    assert node.oob is not None
    try:
        result = await node.oob.exec(DIAGNOSE, timeout=30)
    except GuestAgentUnavailable as exc:
        evidence["guest_agent"] = str(exc)
        return _agent(node, "the guest runs but answers neither SSH nor its guest agent", evidence)
    out = result.stdout
    evidence["guest_agent_probe"] = out[-6000:]
    targets = _field(out, "targets")
    if "rescue.target" in targets or "emergency.target" in targets:
        why = f"the system was switched to rescue/emergency mode (active targets: {targets})"
        return _agent(node, why, evidence, True)
    if _field(out, "sshd") == "stopped" or _field(out, "listen22") == "0":
        return _agent(node, "sshd is not running (guest agent: no sshd listening on port 22)", evidence, True)
    link, address = _mgmt_link(out, node.mgmt_ip)
    down = _down_links(out)
    if link is False or (link is None and down):
        iface = address if link is False else ", ".join(down)
        return _agent(node, f"the management interface is down ({iface}; guest agent: ip link)", evidence, True)
    if link is None:
        return _agent(node, f"the management address {node.mgmt_ip} is gone (guest agent: ip addr)", evidence, True)
    return _agent(
        node,
        f"the harness's SSH to {address} is filtered: sshd listens and the link is up (guest agent: firewall rules)",
        evidence,
        True,
    )


def _field(out: str, name: str) -> str:
    found = re.search(rf"^{name}: ?(.*)$", out, re.MULTILINE)
    return found.group(1).strip() if found else ""


def _down_links(out: str) -> list[str]:
    """Interfaces other than loopback that are administratively down or have no carrier
    (networkd drops the addresses of a link that goes down, so the address alone can
    look "gone")."""
    down = []
    for found in re.finditer(r"^\d+:\s+([^:@\s]+)[:@][^<]*<([^>]*)>", out, re.MULTILINE):
        name, flags = found.group(1), found.group(2).split(",")
        if name != "lo" and ("UP" not in flags or "NO-CARRIER" in flags):
            down.append(name)
    return down


def _mgmt_link(out: str, mgmt_ip: str) -> tuple[bool | None, str]:
    """(is the interface holding `mgmt_ip` up — None when no interface holds it, address)."""
    found = re.search(rf"^\d+:\s+(\S+)\s+inet\s+{re.escape(mgmt_ip)}/", out, re.MULTILINE)
    if found is None:
        return None, mgmt_ip
    iface = found.group(1)
    link = re.search(rf"^\d+:\s+{re.escape(iface)}[:@][^\n]*", out, re.MULTILINE)
    flags = re.search(r"<([^>]*)>", link.group(0)) if link else None
    up = flags is not None and "UP" in flags.group(1).split(",") and "NO-CARRIER" not in flags.group(1)
    return up, f"{mgmt_ip} ({iface})"

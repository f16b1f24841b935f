"""Who cut SSH off? The lockout diagnosis on fakes of libvirt's view, the guest agent and the
console (the real path is tests/vm/test_run_truth.py)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from testbed.errors import GuestLost, HarnessError
from testbed.guest.result import ExecResult
from testbed.guest.ssh import SessionNotReady
from testbed.hypervisor.connection import DomainStatus
from testbed.hypervisor.events import StopEvent
from testbed.runner.lockout import LOCKOUT, diagnose

LINKS_UP = "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 state UP\n"
LINKS_DOWN = "2: eth0: <BROADCAST,MULTICAST> mtu 1500 state DOWN\n"
ADDR = "2: eth0    inet 10.9.0.2/24 brd 10.9.0.255 scope global eth0\n"


def probe(sshd: str = "running", listen: str = "1", targets: str = "multi-user.target", links: str = LINKS_UP,
          addresses: str = ADDR) -> str:  # fmt: skip
    return (
        f"sshd: {sshd}\nlisten22: {listen}\ntargets: {targets}\n--- links\n{links}--- addresses\n{addresses}"
        "--- nft\ntable inet f { chain input { type filter hook input priority 0; policy drop; } }\n--- iptables\n"
    )


class FakeHypervisor:
    def __init__(self, status: DomainStatus) -> None:
        self.status = status

    async def domain_status(self, name: str) -> DomainStatus:
        return self.status


class FakeOob:
    def __init__(self, answers: bool, output: str = "") -> None:
        self.answers, self.output = answers, output

    async def ping(self) -> bool:
        return self.answers

    async def exec(self, command: str, **_: object) -> ExecResult:
        return ExecResult(command, 0, self.output, "", datetime.now(UTC), 5)


class FakeSession:
    def __init__(self, answers: bool) -> None:
        self.answers = answers

    async def close(self) -> None:
        return None

    async def connect(self, timeout: float = 10) -> None:
        if not self.answers:
            raise HarnessError("ssh: connection refused")


class Node:
    def __init__(self, tmp: Path, status: DomainStatus, *, ssh: bool = False, oob: FakeOob | None = None,
                 console: str = "") -> None:  # fmt: skip
        self.name, self.domain, self.mgmt_ip = "node", "tb-x-node", "10.9.0.2"
        self.hypervisor = FakeHypervisor(status)
        self.session = FakeSession(ssh)
        self.oob = oob
        self.console_log = tmp / "console.log"
        self.console_log.write_text(console)


RUNNING = DomainStatus("running", None, None)


def run(node: Node):
    return asyncio.run(diagnose(node, GuestLost("ssh: connection lost running a command"), settle_s=0))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "console", "agent", "reason"),
    [
        (DomainStatus("missing", None, StopEvent("shutdown", 0.0)), "", True, "powered itself off"),
        (DomainStatus("shutoff", "shutdown", None), "", True, "powered itself off"),
        (DomainStatus("missing", None, None), "[  12.0] reboot: Power down\n", True, "powered itself off"),
        (DomainStatus("crashed", "panicked", None), "", True, "kernel panicked"),
        (DomainStatus("missing", None, StopEvent("destroyed", 0.0)), "", False, "from outside (destroyed)"),
        (DomainStatus("shutoff", "crashed", None), "", False, "from outside (crashed)"),
        (DomainStatus("missing", None, None), "", False, "from outside (unknown)"),
    ],
)
def test_stopped_guests(tmp_path: Path, status: DomainStatus, console: str, agent: bool, reason: str) -> None:
    loss = run(Node(tmp_path, status, console=console))
    assert loss.agent_caused is agent and reason in loss.reason, loss.reason
    assert loss.reason.startswith(LOCKOUT) is agent
    assert loss.evidence["domain"]["state"] == status.state


def test_ssh_that_answers_again_is_not_a_lockout(tmp_path: Path) -> None:
    loss = run(Node(tmp_path, RUNNING, ssh=True))
    assert loss.recovered and not loss.agent_caused


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (probe(sshd="stopped", listen="0"), "sshd is not running"),
        (probe(links=LINKS_DOWN), "management interface is down"),
        (probe(links=LINKS_DOWN, addresses=""), "management interface is down"),
        (probe(addresses=""), "management address 10.9.0.2 is gone"),
        (probe(targets="rescue.target sysinit.target"), "rescue/emergency mode"),
        (probe(), "filtered"),
    ],
)
def test_running_guest_probed_through_the_guest_agent(tmp_path: Path, output: str, reason: str) -> None:
    loss = run(Node(tmp_path, RUNNING, oob=FakeOob(True, output)))
    assert loss.agent_caused and loss.oob_usable and reason in loss.reason, loss.reason
    assert "sshd:" in loss.evidence["guest_agent_probe"]


@pytest.mark.parametrize(
    ("console", "reason"),
    [
        ("Kernel panic - not syncing: sysrq triggered crash\n", "kernel panicked"),
        ("You are in rescue mode. After logging in, type ...\n", "rescue/emergency mode"),
        ("", "answers neither SSH nor its guest agent"),
    ],
)
def test_running_guest_silent_everywhere_reads_the_console(tmp_path: Path, console: str, reason: str) -> None:
    loss = run(Node(tmp_path, RUNNING, oob=FakeOob(False), console=console))
    assert loss.agent_caused and not loss.oob_usable and reason in loss.reason, loss.reason


def test_no_hypervisor_cannot_blame_the_agent(tmp_path: Path) -> None:
    node = Node(tmp_path, RUNNING)
    node.hypervisor = None  # type: ignore[assignment]
    loss = run(node)
    assert not loss.agent_caused and not loss.recovered


def test_a_session_that_never_became_ready_after_a_restore_is_not_a_lockout(tmp_path: Path) -> None:
    """Even when the guest looks cut off (sshd stopped), no agent command ran before it."""
    node = Node(tmp_path, RUNNING, oob=FakeOob(True, probe(sshd="stopped", listen="0")))
    fault = SessionNotReady("ssh 10.9.0.2: the session never became ready: SSH not ready after 120 s")
    loss = asyncio.run(diagnose(node, fault, settle_s=0))  # type: ignore[arg-type]
    assert not loss.agent_caused and not loss.recovered and "never became ready" in loss.reason


class SequenceHypervisor:
    """Reports `running` a few times, then how the guest ended."""

    def __init__(self, then: DomainStatus, running_for: int) -> None:
        self.then, self.left = then, running_for

    async def domain_status(self, name: str) -> DomainStatus:
        self.left -= 1
        return RUNNING if self.left >= 0 else self.then


def test_a_guest_on_its_way_down_is_watched_until_it_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("testbed.runner.lockout.SETTLE_POLL_S", 0.01)
    node = Node(tmp_path, RUNNING, oob=FakeOob(False))
    node.hypervisor = SequenceHypervisor(DomainStatus("missing", None, StopEvent("shutdown", 0.0)), 3)  # type: ignore[assignment]
    loss = asyncio.run(diagnose(node, GuestLost("lost"), settle_s=30))  # type: ignore[arg-type]
    assert loss.agent_caused and "powered itself off" in loss.reason, loss.reason


def test_a_rebooting_guest_whose_ssh_comes_back_is_recovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("testbed.runner.lockout.SETTLE_POLL_S", 0.01)
    node = Node(tmp_path, RUNNING, oob=FakeOob(False))
    calls = {"n": 0}

    async def connect(timeout: float = 10) -> None:
        calls["n"] += 1
        if calls["n"] < 3:
            raise HarnessError("ssh: connection refused")

    node.session.connect = connect  # type: ignore[method-assign]
    loss = asyncio.run(diagnose(node, GuestLost("lost"), settle_s=30))  # type: ignore[arg-type]
    assert loss.recovered and not loss.agent_caused

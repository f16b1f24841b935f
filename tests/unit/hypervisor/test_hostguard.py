"""Host guard: which URIs get it, how it is switched off, and that its ruleset parses."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from testbed.hypervisor import hostguard
from testbed.hypervisor.labnetworks import bridge_name


def test_local_and_remote_uris() -> None:
    assert hostguard.uri_is_local("qemu:///system")
    assert hostguard.uri_is_local("qemu:///session")
    assert not hostguard.uri_is_local("qemu+ssh://root@lab2/system")
    assert not hostguard.uri_is_local("qemu+tcp://10.0.0.2/system")


class FakeLink:
    """A lab-host SSH link that records what it is asked to run."""

    def __init__(self, status: int = 0) -> None:
        self.status = status
        self.calls: list[tuple[str, bytes | None]] = []
        self.target = "root@lab2"

    async def run(self, command: str, *, stdin: bytes | None = None, timeout: float = 60) -> tuple[int, str, str]:
        self.calls.append((command, stdin))
        return self.status, "", "" if self.status == 0 else "nft: Operation not permitted"


def test_remote_uri_gets_the_ruleset_over_its_ssh_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_HOST_GUARD", raising=False)
    monkeypatch.setattr(hostguard.shutil, "which", lambda _b: pytest.fail("must not look for a local nft"))
    link = FakeLink()
    done = asyncio.run(hostguard.ensure_host_guard("qemu+ssh://root@lab2/system", link))  # type: ignore[arg-type]
    assert "root@lab2" in done
    assert link.calls == [("nft -f -", hostguard.RULESET.encode())]


def test_remote_guard_failure_or_missing_link_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_HOST_GUARD", raising=False)
    with pytest.raises(hostguard.HarnessError, match=r"Operation not permitted.*TESTBED_HOST_GUARD=0"):
        asyncio.run(hostguard.ensure_host_guard("qemu+ssh://lab2/system", FakeLink(1)))  # type: ignore[arg-type]
    with pytest.raises(hostguard.HarnessError, match="no SSH link"):
        asyncio.run(hostguard.ensure_host_guard("qemu+ssh://lab2/system"))


def test_disabled_by_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_HOST_GUARD", "0")
    assert "disabled" in asyncio.run(hostguard.ensure_host_guard("qemu:///system"))


def test_missing_nft_is_an_error_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_HOST_GUARD", raising=False)
    monkeypatch.setattr(hostguard.shutil, "which", lambda _b: None)
    monkeypatch.setattr(hostguard.os.path, "exists", lambda _p: False)
    with pytest.raises(hostguard.HarnessError, match="apt-get install nftables"):
        asyncio.run(hostguard.ensure_host_guard("qemu:///system"))


def test_pattern_matches_every_bridge_testbed_names() -> None:
    assert bridge_name("0231d", "mgmt").startswith(hostguard.BRIDGE_PATTERN.rstrip("*"))
    assert bridge_name("ab12f", "lan").startswith(hostguard.BRIDGE_PATTERN.rstrip("*"))


@pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed (scripts/setup-host.sh installs it)")
def test_ruleset_is_valid_nftables() -> None:
    """`nft --check` parses the ruleset without applying it (nothing changes on this host)."""
    proc = subprocess.run(["nft", "--check", "-f", "-"], input=hostguard.RULESET, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr

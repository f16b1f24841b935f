"""A CLI login (the vtysh dialect) against a real sshd on loopback whose login runs a
network CLI instead of a shell (`ForceCommand`, as a router's `admin` gets vtysh): the
command arrives as written, the CLI's exit status comes back, and at the deadline the
harness's own login kills the CLI by the token in its environment."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.guest.dialects import DIALECTS, ENV_MARK, kill_by_env_command
from testbed.guest.ssh import GuestSession, generate_key
from testbed.hypervisor.node import LabNode
from testbed.model.images import load_image
from testbed.model.vocab import Source
from tests.unit.guest.sshd import needs_sshd, running_sshd

pytestmark = needs_sshd

CLI = r"""
import os, sys, time
# a network CLI: one command per line of the SSH command, stops at the first it refuses
for line in os.environ.get("SSH_ORIGINAL_COMMAND", "").splitlines():
    words = line.split()
    if words[:2] == ["show", "version"]:
        print("FakeOS 1.0")
    elif words[:1] == ["raw"]:
        print(repr(os.environ["SSH_ORIGINAL_COMMAND"]))
    elif words[:1] == ["wait"]:
        print("waiting", flush=True)
        time.sleep(float(words[1]))
    else:
        print(f"% Unknown command: {line}")
        sys.exit(1)
"""


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, object, str, str]]:
    """(cli port, shell port, client key, cli host key, shell host key): two sshds, one
    whose login is the CLI, one with root's shell for the harness."""
    work = tmp_path_factory.mktemp("cli")
    (work / "cli.py").write_text(CLI)
    force = f"AcceptEnv LC_*\nForceCommand {sys.executable} {work / 'cli.py'}\n"
    key = generate_key()
    with (
        running_sshd(work / "cli", client_key=key, extra=force) as (cli_port, _, cli_host),
        running_sshd(work / "shell", client_key=key) as (shell_port, _, shell_host),
    ):
        yield cli_port, shell_port, key, cli_host, shell_host


def sessions(servers: tuple[int, int, object, str, str]) -> tuple[GuestSession, GuestSession]:
    cli_port, shell_port, key, cli_host, shell_host = servers
    harness = GuestSession("127.0.0.1", port=shell_port, client_key=key, host_key=shell_host, dialect="debian")  # type: ignore[arg-type]

    async def reap(token: str) -> object:
        return await harness.exec(kill_by_env_command(token), timeout=15)

    agent = GuestSession(
        "127.0.0.1",
        port=cli_port,
        client_key=key,
        host_key=cli_host,
        dialect="vtysh",
        reaper=reap,  # type: ignore[arg-type]
    )
    return agent, harness


def test_the_command_arrives_as_written_and_the_cli_status_comes_back(servers) -> None:
    agent, harness = sessions(servers)

    async def go() -> None:
        shown = await agent.exec("show version")
        assert (shown.exit_code, shown.stdout) == (0, "FakeOS 1.0\n")
        raw = await agent.exec("configure terminal\nraw")
        assert raw.exit_code == 1 and "% Unknown command: configure terminal" in raw.stdout
        text = "show version\nraw"
        assert (await agent.exec(text)).stdout.splitlines()[-1] == repr(text)  # no marker, no wrapper
        refused = await agent.exec("ip route")
        assert refused.exit_code == 1 and not refused.timed_out
        await agent.close()
        await harness.close()

    asyncio.run(go())


def test_at_the_deadline_the_harness_kills_the_cli_by_its_token(servers) -> None:
    agent, harness = sessions(servers)

    async def go() -> None:
        t0 = time.monotonic()
        result = await agent.exec("wait 60", timeout=2)
        assert result.timed_out and result.exit_code is None and "waiting" in result.stdout
        assert time.monotonic() - t0 < 15
        await agent.close()
        await harness.close()

    asyncio.run(go())
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", "cli.py"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_the_kill_command_finds_only_the_token(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "60"], env={ENV_MARK: "abcdef0123456789"})
    other = subprocess.Popen(["sleep", "60"], env={ENV_MARK: "abcdef0123456780"})
    # Popen returns once exec has closed the error pipe, which the kernel does
    # before it lays out the new environment; wait until both are readable
    for child in (proc, other):
        environ = Path(f"/proc/{child.pid}/environ")
        deadline = time.monotonic() + 10
        while ENV_MARK.encode() not in environ.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
    try:
        subprocess.run(["sh", "-c", kill_by_env_command("abcdef0123456789")], check=True, timeout=30)
        assert proc.wait(timeout=5) == -9
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
    with pytest.raises(ValueError, match="not a command token"):
        kill_by_env_command("x'; reboot; '")


def test_cli_dialect_wraps_nothing() -> None:
    vtysh = DIALECTS["vtysh"]
    assert vtysh.cli and not vtysh.session_marker
    assert vtysh.wrap("configure terminal\nrouter ospf", 30) == "configure terminal\nrouter ospf"
    assert DIALECTS["frr"].wrap("true", 30).startswith("printf '\\036testbed-pid")  # root's shell on the router


def test_a_node_sends_the_agents_commands_through_the_agents_login(servers, tmp_path: Path) -> None:
    agent, harness = sessions(servers)
    image = load_image(Path(__file__).resolve().parents[3] / "images" / "frr-router.yaml")
    node = LabNode("r1", image, "tb-x-r1", "127.0.0.1", {}, tmp_path / "console.log", harness, agent_session=agent)

    async def go() -> None:
        assert (await node.as_source(Source.AGENT).exec("show version")).stdout == "FakeOS 1.0\n"
        assert (await node.as_source(Source.HARNESS).exec("echo root shell")).stdout == "root shell\n"
        assert node.as_source(Source.HARNESS) is node
        node.access = "oob"  # the agent cut SSH: nothing goes through its login any more
        assert node.as_source(Source.AGENT) is node
        await node.close()

    asyncio.run(go())

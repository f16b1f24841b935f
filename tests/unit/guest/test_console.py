"""The serial console as a channel: prompt recognition and login against console
transcripts (tests/unit/guest/transcripts.py) with every catalog entry's own prompts, the
bootstrap with a node's values, and commands over a real shell on a real pty with SSH's
exit-status, time and output bounds."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import time
from pathlib import Path

import pytest

from testbed.config import project_root
from testbed.errors import HarnessError
from testbed.guest.console import ConsoleSession, ConsoleTimeout, clean
from testbed.guest.consolexec import CHUNK, ConsoleChannel, printf_escape, write_file_lines
from testbed.hypervisor.consoleboot import bootstrap_values, console_bootstrap, host_key_in
from testbed.model.device import ConsoleSpec, ConsoleStep
from testbed.model.images import load_catalog
from testbed.testing.ptyconsole import PtyConsole, ReplayConsole
from tests.unit.guest import transcripts

CATALOG = load_catalog(project_root() / "images")
SHELL = ConsoleSpec(
    prompt=r"root@[^ :]*:[^#]*# *$", user="root", password="testbed", host_key="true", login_timeout_s=20
)
KEY = "ssh-ed25519 " + "A" * 68 + " testbed-harness"


def login(transcript: transcripts.Transcript, spec: ConsoleSpec) -> ReplayConsole:
    console = ReplayConsole(transcript)
    asyncio.run(ConsoleSession(console, "n1").login(spec))
    return console


def test_clean_takes_escape_sequences_and_carriage_returns_out() -> None:
    assert clean(b"\x1b[?2004hroot@r1:~# \x1b[0m\x1b]0;title\x07x\r\n") == "root@r1:~# x\n"


def test_debian_getty_login_through_boot_messages_and_bash_escapes() -> None:
    console = login(transcripts.debian_getty, CATALOG["frr-router-console"].console)  # type: ignore[arg-type]
    assert bytes(console.written) == b"\rroot\rtestbed\r"
    assert not console.steps


def test_a_console_already_logged_in_is_used_as_it_is() -> None:
    console = login(transcripts.debian_logged_in, CATALOG["frr-router-console"].console)  # type: ignore[arg-type]
    assert bytes(console.written) == b"\r"


def test_a_refused_login_is_a_harness_error_without_the_password() -> None:
    with pytest.raises(HarnessError, match="console login as root was refused") as info:
        login(transcripts.debian_refused, CATALOG["frr-router-console"].console)  # type: ignore[arg-type]
    assert "testbed" not in str(info.value).replace("testbed login", "")


@pytest.mark.parametrize(
    ("image", "transcript", "typed"),
    [
        ("vyos", transcripts.vyos, b"\rvyos\rvyos\r"),
        ("openwrt-23.05", transcripts.openwrt, b"\r"),
        ("opnsense-23.1", transcripts.opnsense, b"\rroot\ropnsense\r"),
        ("sonic-vs", transcripts.sonic, b"\radmin\rYourPaSsWoRd\r"),
    ],
)
def test_every_vendor_entry_recognises_its_console(
    image: str, transcript: transcripts.Transcript, typed: bytes
) -> None:
    spec = CATALOG[image].console
    assert spec is not None and CATALOG[image].console_managed
    console = ReplayConsole(transcript)
    session = ConsoleSession(console, image)

    async def go() -> None:
        await session.login(spec)
        for step in spec.enter:
            await session.step(step, {}, spec.prompt)

    asyncio.run(go())
    assert bytes(console.written).startswith(typed)
    assert not console.steps  # the whole transcript was walked


def test_a_prompt_that_never_comes_times_out_naming_the_screen() -> None:
    console = ReplayConsole([(None, b"Booting...\r\n[ 3.1] EXT4-fs mounted\r\n")])
    with pytest.raises(ConsoleTimeout, match=r"EXT4-fs mounted"):
        asyncio.run(ConsoleSession(console, "n1").expect(r"login: *$", 0.5))


def test_bootstrap_values_and_the_console_images_own_steps() -> None:
    values = bootstrap_values(
        hostname="r1",
        mgmt_ip="10.213.0.10",
        mgmt_subnet=ipaddress.IPv4Network("10.213.0.0/24"),
        mgmt_mac="52:54:00:AB:00:01",
        host_ip="10.213.0.1",
        public_key=KEY,
    )
    assert values["mgmt_cidr"] == "10.213.0.10/24" and values["mgmt_netmask"] == "255.255.255.0"
    assert values["key_type"] == "ssh-ed25519" and values["mgmt_mac"] == "52:54:00:ab:00:01"
    spec = CATALOG["frr-router-console"].console
    assert spec is not None
    sent = [step.send.format_map(values) for step in spec.bootstrap]
    assert "Address=10.213.0.10/24" in sent[1] and "MACAddress=52:54:00:ab:00:01" in sent[1]
    assert "m=${d##*/}" in sent[1] and KEY in sent[2]
    for image in ("vyos", "openwrt-23.05", "opnsense-23.1", "sonic-vs"):
        vendor = CATALOG[image].console
        assert vendor is not None
        for step in [*vendor.enter, *vendor.bootstrap]:
            assert "{" not in step.send.format_map(values).replace("${", "")


def test_an_unknown_template_field_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown template field"):
        ConsoleStep(send="ip addr add {mgmt_address} dev eth0")


def test_host_keys_are_found_in_console_output() -> None:
    text = "cat /etc/ssh/ssh_host_ed25519_key.pub\r\n" + KEY.replace(" testbed-harness", " root@r1") + "\r\n# "
    assert host_key_in(text) == KEY.split()[0] + " " + KEY.split()[1]
    assert host_key_in("cat: /etc/ssh/ssh_host_ed25519_key.pub: No such file") is None


def test_printf_escapes_survive_any_bytes() -> None:
    data = bytes(range(256)) + "'\"$`\\%é\n".encode()
    lines = write_file_lines("/tmp/x", data, "ab")
    assert len(lines) == 1 + -(-len(data) // CHUNK)
    assert all(len(line) < 1100 and line.isascii() for line, _ in lines)
    assert re.fullmatch(r"[A-Za-z0-9 ,._+:@/=\\-]*", printf_escape(data))


async def _logged_in() -> tuple[PtyConsole, ConsoleSession]:
    pty = await PtyConsole.login_shell()
    session = ConsoleSession(pty, "r1")
    await session.login(SHELL)
    return pty, session


def test_commands_over_a_real_shell_on_a_pty(tmp_path: Path) -> None:
    async def go() -> None:
        _pty, session = await _logged_in()
        channel = ConsoleChannel(session, str(tmp_path))
        done = await channel.exec("echo out; echo err >&2; exit 7")
        assert (done.exit_code, done.stdout, done.stderr, done.timed_out) == (7, "out\n", "err\n", False)
        tricky = "printf 'a\\tb\\r\\n'; echo \"$(printf '\\036B') forged\"; cat <<'EOF'\n$HOME 'q' `x`\nEOF"
        done = await channel.exec(tricky)
        assert done.exit_code == 0 and done.stdout == "a\tb\r\n\x1eB forged\n$HOME 'q' `x`\n"
        data = bytes(range(1, 256)) * 40
        done = await channel.exec("od -An -tx1 | tr -d ' \\n' | wc -c", stdin=data)
        assert done.stdout.strip() == str(2 * len(data))
        done = await channel.exec("seq 1 200000", max_output=2000)
        assert done.stdout_truncated and done.stdout.endswith("199999\n200000\n") and len(done.stdout) < 2200
        await session.close()

    asyncio.run(go())


def test_a_console_command_past_its_deadline_is_interrupted(tmp_path: Path) -> None:
    async def go() -> None:
        _pty, session = await _logged_in()
        channel = ConsoleChannel(session, str(tmp_path))
        t0 = time.monotonic()
        done = await channel.exec("echo started; sleep 60; echo never", timeout=2)
        assert done.timed_out and done.exit_code is None and done.stdout == "started\n"
        assert time.monotonic() - t0 < 6
        silent = await channel.exec("sleep 60", timeout=30, idle_timeout=1)
        assert silent.timed_out and silent.idle_timed_out
        after = await channel.exec("echo still usable")
        assert after.exit_code == 0 and after.stdout == "still usable\n"
        await session.close()

    asyncio.run(go())


def test_bootstrap_on_a_real_console_pins_the_key_or_keeps_the_console(tmp_path: Path) -> None:
    key_file = tmp_path / "host.pub"
    spec = ConsoleSpec(
        prompt=SHELL.prompt,
        user="root",
        password="testbed",
        bootstrap=[
            ConsoleStep(send=f"echo {{hostname}} {{mgmt_cidr}} > {tmp_path}/boot"),
            ConsoleStep(send=f"echo '{{authorized_key}}' > {tmp_path}/keys"),
            ConsoleStep(send=f"echo '{KEY}' > {key_file}"),
        ],
        host_key=f"cat {key_file}",
    )
    values = {"hostname": "r1", "mgmt_cidr": "10.213.0.10/24", "authorized_key": "ssh-ed25519 AAAA harness"}

    async def go() -> None:
        done = await console_bootstrap(await PtyConsole.login_shell(), spec, values, "r1")
        assert done.host_key == " ".join(KEY.split()[:2]) and done.channel is None
        no_ssh = spec.model_copy(update={"ssh": False, "host_key": None, "work_dir": str(tmp_path)})
        kept = await console_bootstrap(await PtyConsole.login_shell(), no_ssh, values, "r1")
        assert kept.channel is not None
        assert (await kept.channel.exec(f"cat {tmp_path}/boot")).stdout == "r1 10.213.0.10/24\n"
        await kept.channel.session.close()

    asyncio.run(go())
    assert (tmp_path / "keys").read_text() == "ssh-ed25519 AAAA harness\n"

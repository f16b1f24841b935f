"""libvirt's console stream as asyncio bytes: refused by a driver without consoles (the
test driver), drained on libvirt's event thread, ended by a hang-up, written in full."""

from __future__ import annotations

import asyncio

import libvirt
import pytest

from testbed.errors import HarnessError
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.console import LibvirtConsole


def test_a_driver_without_consoles_is_a_harness_error_naming_the_domain() -> None:
    async def go() -> None:
        async with Hypervisor("test:///default") as hv:
            with pytest.raises(HarnessError, match="test: cannot open the serial console"):
                await LibvirtConsole.open(hv, "test")

    asyncio.run(go())


class Stream:
    """Stands in for a non-blocking virStream: recv answers from a script (-2: would block)."""

    def __init__(self, reads: list[bytes | int], sends: list[int] | None = None) -> None:
        self.reads, self.sends, self.sent = list(reads), list(sends or []), b""
        self.removed = False

    def recv(self, _n: int) -> bytes | int:
        return self.reads.pop(0) if self.reads else -2

    def send(self, data: bytes) -> int:
        answer = self.sends.pop(0) if self.sends else len(data)
        if answer > 0:
            self.sent += data[:answer]
        return answer

    def eventRemoveCallback(self) -> None:
        self.removed = True

    def abort(self) -> None:
        pass


def test_readable_events_are_drained_and_a_hangup_ends_the_stream() -> None:
    async def go() -> None:
        stream = Stream([b"login: ", b"", -2])
        console = LibvirtConsole(stream, asyncio.get_running_loop())  # type: ignore[arg-type]
        await asyncio.to_thread(console._on_event, stream, libvirt.VIR_STREAM_EVENT_READABLE, None)  # type: ignore[arg-type]
        assert await console.read() == b"login: "
        assert await console.read() == b"" and await console.read() == b""  # the end, for every reader
        assert stream.removed
        with pytest.raises(HarnessError, match="has ended"):
            await console.write(b"x")

    asyncio.run(go())


def test_writes_retry_while_the_guest_takes_no_input() -> None:
    async def go() -> None:
        stream = Stream([], sends=[-2, 3, -2])
        console = LibvirtConsole(stream, asyncio.get_running_loop())  # type: ignore[arg-type]
        await console.write(b"root\r")
        assert stream.sent == b"root\r"
        await asyncio.to_thread(console._on_event, stream, libvirt.VIR_STREAM_EVENT_HANGUP, None)  # type: ignore[arg-type]
        assert await console.read() == b""

    asyncio.run(go())

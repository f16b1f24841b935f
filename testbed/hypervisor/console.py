"""A domain's serial console as an asyncio byte stream (`testbed.guest.console.ConsoleStream`).

`LibvirtConsole.open(hv, domain)` opens libvirt's console stream (`virDomain.openConsole`
with `VIR_DOMAIN_CONSOLE_FORCE`: testbed is the only client it keeps; the domain's console
log goes on being written by QEMU) on a non-blocking `virStream`. libvirt's event loop
(`testbed.hypervisor.events`, one thread) calls back when the stream is readable; the
callback drains it and hands the bytes to the asyncio loop through a queue. Writes run in
a worker thread and retry while the stream would block. A hang-up or error ends the stream
(`read` then returns b""). Local lab hosts only (a remote host's console would need its
own transport).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import libvirt

from testbed.errors import HarnessError
from testbed.hypervisor.connection import Hypervisor

RECV_BYTES = 65536
_EVENTS = libvirt.VIR_STREAM_EVENT_READABLE | libvirt.VIR_STREAM_EVENT_ERROR | libvirt.VIR_STREAM_EVENT_HANGUP


class LibvirtConsole:
    """See module docstring."""

    def __init__(self, stream: libvirt.virStream, loop: asyncio.AbstractEventLoop) -> None:
        self.stream = stream
        self.loop = loop
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._ended = False

    @classmethod
    async def open(cls, hv: Hypervisor, domain: str) -> LibvirtConsole:
        loop = asyncio.get_running_loop()

        def opened() -> libvirt.virStream:
            stream = hv.conn.newStream(libvirt.VIR_STREAM_NONBLOCK)
            hv.conn.lookupByName(domain).openConsole(None, stream, libvirt.VIR_DOMAIN_CONSOLE_FORCE)
            return stream

        try:
            stream = await hv.call(opened)
        except HarnessError as exc:
            raise HarnessError(f"{domain}: cannot open the serial console: {exc}") from exc
        console = cls(stream, loop)
        await hv.call(stream.eventAddCallback, _EVENTS, console._on_event, None)
        return console

    def _on_event(self, stream: libvirt.virStream, events: int, _opaque: object) -> None:
        """On libvirt's event thread: drain what is readable, or end the stream."""
        if events & libvirt.VIR_STREAM_EVENT_READABLE:
            while True:
                try:
                    data = stream.recv(RECV_BYTES)
                except libvirt.libvirtError:
                    self._end()
                    return
                if data == -2:  # would block: drained
                    break
                if not data:
                    self._end()
                    return
                self.loop.call_soon_threadsafe(self.queue.put_nowait, bytes(data))
        if events & (libvirt.VIR_STREAM_EVENT_ERROR | libvirt.VIR_STREAM_EVENT_HANGUP):
            self._end()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            with contextlib.suppress(libvirt.libvirtError):
                self.stream.eventRemoveCallback()
            self.loop.call_soon_threadsafe(self.queue.put_nowait, b"")

    async def read(self) -> bytes:
        data = await self.queue.get()
        if not data:
            self.queue.put_nowait(b"")  # every later read sees the end too
        return data

    async def write(self, data: bytes) -> None:
        if self._ended:
            raise HarnessError("the serial console stream has ended")
        await asyncio.to_thread(self._send_all, data)

    def _send_all(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + 30
        while view:
            try:
                sent = self.stream.send(bytes(view))
            except libvirt.libvirtError as exc:
                raise HarnessError(f"serial console: {exc}") from exc
            if sent == -2:
                if time.monotonic() > deadline:
                    raise HarnessError("serial console: the guest accepted no input for 30 s")
                time.sleep(0.01)
                continue
            view = view[sent:]

    async def close(self) -> None:
        def finish() -> None:
            if not self._ended:
                self._ended = True
                with contextlib.suppress(libvirt.libvirtError):
                    self.stream.eventRemoveCallback()
            with contextlib.suppress(libvirt.libvirtError):
                self.stream.abort()

        await asyncio.to_thread(finish)

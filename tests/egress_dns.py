"""A DNS stub for egress tests: NXDOMAIN for every name under `.invalid`, and — when given
an upstream resolver — every other query forwarded there (else NXDOMAIN for all).

It lets Squid meet a name that does not resolve without asking the host's resolver about
it: Squid is pointed at the stub (`EgressSettings.nameservers`). Listens on UDP port 53 of
a loopback address (needs root, as the tests run); start with `async with DnsStub(...)`.
"""

from __future__ import annotations

import asyncio
import random
import struct
from typing import Self, cast


def question_name(packet: bytes) -> tuple[str, int]:
    """The first question's name and the offset just past the question (type and class)."""
    labels: list[str] = []
    offset = 12
    while packet[offset]:
        length = packet[offset]
        labels.append(packet[offset + 1 : offset + 1 + length].decode("ascii", "replace"))
        offset += 1 + length
    return ".".join(labels).lower(), offset + 5


def nxdomain(query: bytes) -> bytes:
    """The NXDOMAIN answer to `query` (its id, its question, no records)."""
    _name, end = question_name(query)
    ident, flags = struct.unpack("!HH", query[:4])
    answer_flags = 0x8000 | (flags & 0x7900) | 0x0080 | 3  # QR, opcode + RD kept, RA, NXDOMAIN
    return struct.pack("!HHHHHH", ident, answer_flags, 1, 0, 0, 0) + query[12:end]


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, stub: DnsStub) -> None:
        self.stub = stub
        self.transport: asyncio.DatagramTransport | None = None
        self.pending: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        task = asyncio.ensure_future(self.stub.answer(data, addr, self))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)


class DnsStub:
    def __init__(self, upstream: str | None = None, address: str | None = None) -> None:
        self.upstream = upstream
        self.address = address or f"127.53.{random.randint(1, 254)}.{random.randint(1, 254)}"
        self.names: list[str] = []
        self._transport: asyncio.DatagramTransport | None = None

    async def __aenter__(self) -> Self:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(self), local_addr=(self.address, 53))
        self._transport = transport
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._transport is not None:
            self._transport.close()

    async def answer(self, query: bytes, addr: tuple[str, int], protocol: _Protocol) -> None:
        try:
            name, _ = question_name(query)
        except (IndexError, UnicodeDecodeError):
            return
        self.names.append(name)
        reply = nxdomain(query)
        if self.upstream is not None and not (name == "invalid" or name.endswith(".invalid")):
            reply = await self._forward(query) or reply
        if protocol.transport is not None:
            protocol.transport.sendto(reply, addr)

    async def _forward(self, query: bytes) -> bytes | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()

        class _Once(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                if not future.done():
                    future.set_result(data)

        assert self.upstream is not None
        transport, _ = await loop.create_datagram_endpoint(_Once, remote_addr=(self.upstream, 53))
        try:
            transport.sendto(query)
            return await asyncio.wait_for(future, 5.0)
        except TimeoutError:
            return None
        finally:
            transport.close()


def system_resolver(path: str = "/etc/resolv.conf") -> str | None:
    """The first nameserver of resolv.conf, if any."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2 and parts[0] == "nameserver":
                    return parts[1]
    except OSError:
        pass
    return None


async def _serve(address: str, upstream: str | None) -> None:
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with DnsStub(upstream=upstream, address=address):
        print("ready", flush=True)
        await stop.wait()


if __name__ == "__main__":  # python -m tests.egress_dns ADDRESS [UPSTREAM]: serve until SIGTERM
    import sys

    asyncio.run(_serve(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))

"""The relay pair that carries guests' proxy connections to Squid without routing.

    guest ──TCP──▶ LabListener (lab's namespace, management bridge address, port N)
                     │ writes a PROXY v1 header with the guest's address, then the bytes
                     ▼
                   Unix socket (a path both namespaces see)
                     ▼
                   UpstreamRelay (the proxy's namespace) ──TCP──▶ Squid on 127.0.0.1

No packet of a guest ever leaves the lab's namespace: each side is a socket endpoint of
its own namespace, and bytes cross through the filesystem's Unix socket.

Contracts:
- `LabListener` accepts only clients inside `clients` (the lab's management subnet); any
  other connection is closed unanswered. Every accepted connection gets its own Unix
  connection, preceded by `PROXY TCP4 <guest> <listen address> <guest port> <port>\\r\\n`.
- `UpstreamRelay` forwards every connection on its Unix socket to `target` as bytes,
  retrying the TCP connect for `connect_retry_s` (Squid closes and reopens its port while it
  reloads); the socket file is created with mode 0600 and removed when it stops.
- Both are async context managers; closing stops listening and ends the connections in
  flight. Half-closes are passed on (EOF one way leaves the other way open).
- `python -m testbed.egress.relay upstream --unix PATH --connect HOST:PORT` runs an
  `UpstreamRelay` until SIGTERM/SIGINT, printing `ready` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import os
import signal
from pathlib import Path
from typing import Self

CHUNK = 64 * 1024


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes from `reader` to `writer` until EOF, then half-close `writer`."""
    while data := await reader.read(CHUNK):
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()


async def splice(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    b: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """Copy both ways between two connections until both directions ended or one failed,
    then close both (also when cancelled)."""
    tasks = [asyncio.ensure_future(_copy(a[0], b[1])), asyncio.ensure_future(_copy(b[0], a[1]))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in (a[1], b[1]):
            writer.close()
        for writer in (a[1], b[1]):
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()


def proxy_header(client: tuple[str, int], local: tuple[str, int]) -> bytes:
    """A PROXY protocol v1 header for a TCP4 connection from `client` to `local`."""
    return f"PROXY TCP4 {client[0]} {local[0]} {client[1]} {local[1]}\r\n".encode("ascii")


class _Server:
    """An asyncio server whose connection handlers are tracked, so closing ends them."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _track(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection, tracked; ended quietly when the server closes (asyncio would
        log a cancelled connection handler as an error)."""
        self._track()
        with contextlib.suppress(asyncio.CancelledError):
            await self._serve(reader, writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        raise NotImplementedError


class LabListener(_Server):
    """The lab side: TCP on the management bridge address, to the Unix socket."""

    def __init__(self, host: str, port: int, upstream: Path, clients: ipaddress.IPv4Network | None) -> None:
        super().__init__()
        self.host = host
        self.requested_port = port
        self.upstream = upstream
        self.clients = clients
        self.port = port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.requested_port)
        self.port = self._server.sockets[0].getsockname()[1]

    def _admits(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return isinstance(ip, ipaddress.IPv4Address) and (self.clients is None or ip in self.clients)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        local = writer.get_extra_info("sockname")
        if not self._admits(peer[0]):
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(str(self.upstream))
        except OSError:
            writer.close()
            return
        up_writer.write(proxy_header((peer[0], peer[1]), (local[0], local[1])))
        await splice((reader, writer), (up_reader, up_writer))


class UpstreamRelay(_Server):
    """The proxy side: the Unix socket, to Squid's TCP port."""

    def __init__(self, path: Path, target: tuple[str, int], connect_retry_s: float = 10.0) -> None:
        super().__init__()
        self.path = path
        self.target = target
        self.connect_retry_s = connect_retry_s

    async def start(self) -> None:
        self.path.unlink(missing_ok=True)
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._handle, str(self.path))
        finally:
            os.umask(old)

    async def close(self) -> None:
        await super().close()
        self.path.unlink(missing_ok=True)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.connect_retry_s
        while True:
            try:
                return await asyncio.open_connection(*self.target)
            except ConnectionRefusedError:
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await self._connect()
        except OSError:
            writer.close()
            return
        await splice((reader, writer), upstream)


async def _serve_upstream(path: Path, target: tuple[str, int]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with UpstreamRelay(path, target):
        print("ready", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m testbed.egress.relay")
    sub = parser.add_subparsers(dest="command", required=True)
    upstream = sub.add_parser("upstream", help="relay a Unix socket to a TCP address (the proxy side)")
    upstream.add_argument("--unix", type=Path, required=True)
    upstream.add_argument("--connect", required=True, help="HOST:PORT")
    args = parser.parse_args(argv)
    host, _, port = args.connect.rpartition(":")
    asyncio.run(_serve_upstream(args.unix, (host, int(port))))


if __name__ == "__main__":
    main()

"""The relay pair: a TCP connection carried over a Unix socket, with the PROXY header that
names the real client, half-closes passed on, clients outside the lab refused, and the
upstream side run as its own process (`python -m testbed.egress.relay upstream`)."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from testbed.egress.proxy import stop_process
from testbed.egress.relay import LabListener, UpstreamRelay, proxy_header


class Recorder:
    """A TCP server that records what each client sent and answers it reversed after EOF."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()  # until the client's half-close
        self.received.append(data)
        writer.write(data[::-1])
        await writer.drain()
        writer.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])


@pytest.fixture
async def target() -> AsyncIterator[Recorder]:
    recorder = Recorder()
    recorder.server = await asyncio.start_server(recorder.handle, "127.0.0.1", 0)
    yield recorder
    recorder.server.close()


@pytest.fixture
def socket_path() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="tb-relay-") as directory:
        yield Path(directory) / "relay.sock"


async def exchange(port: int, payload: bytes, source: str = "127.0.0.5") -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    writer.write(payload)
    writer.write_eof()  # half-close: the answer must still come back
    try:
        answer = await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:  # closed by the listener with our bytes unread
        answer = b""
    writer.close()
    return answer


async def test_a_connection_crosses_the_unix_socket_with_the_client_named(target: Recorder, socket_path: Path) -> None:
    clients = ipaddress.IPv4Network("127.0.0.0/24")
    async with (
        UpstreamRelay(socket_path, ("127.0.0.1", target.port)),
        LabListener("127.0.0.1", 0, socket_path, clients) as listener,
    ):
        assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
        payload = b"GET http://deb.debian.org/ HTTP/1.1\r\n\r\n" * 1000
        answer = await exchange(listener.port, payload)
        header, _, body = target.received[0].partition(b"\r\n")
        assert header.startswith(b"PROXY TCP4 127.0.0.5 127.0.0.1 ")
        assert header.endswith(f" {listener.port}".encode())
        assert body == payload
        assert answer == target.received[0][::-1]
        # outside the lab's subnet: closed unanswered, nothing reaches the target
        assert await exchange(listener.port, b"x", source="127.0.1.5") == b""
        assert len(target.received) == 1
    assert not socket_path.exists()


async def test_closing_the_listener_ends_connections_in_flight(target: Recorder, socket_path: Path) -> None:
    async with UpstreamRelay(socket_path, ("127.0.0.1", target.port)):
        listener = LabListener("127.0.0.1", 0, socket_path, None)
        await listener.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(b"partial")
        await writer.drain()
        await asyncio.sleep(0.1)
        await listener.close()
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()


def test_proxy_header_is_protocol_v1() -> None:
    assert (
        proxy_header(("10.213.5.10", 40000), ("10.213.5.1", 3127))
        == b"PROXY TCP4 10.213.5.10 10.213.5.1 40000 3127\r\n"
    )


async def test_the_upstream_side_runs_as_its_own_process(target: Recorder, socket_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[3]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "testbed.egress.relay",
        "upstream",
        "--unix",
        str(socket_path),
        "--connect",
        f"127.0.0.1:{target.port}",
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert await asyncio.wait_for(proc.stdout.readline(), 20) == b"ready\n"
        async with LabListener("127.0.0.1", 0, socket_path, None) as listener:
            answer = await exchange(listener.port, b"hello")
            assert target.received[-1].startswith(b"PROXY TCP4 127.0.0.5 ")
            assert target.received[-1].endswith(b"\r\nhello")
            assert answer == target.received[-1][::-1]
    finally:
        await stop_process(proc, 5)
    assert proc.returncode == 0
    assert not socket_path.exists()

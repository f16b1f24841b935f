"""One command on one SSH channel: output, exit status, and what a command left running.

Contract of `CommandChannel` (used by `GuestSession.exec`):
- stdout and stderr are captured (bounded, head and tail kept); with a session marker the
  first stderr line carries the session shell's pid (`PID_MARK`) and is not part of stderr.
- `wait(timeout, idle_timeout)` returns when the command's shell has exited (its exit status
  arrived); `settle(grace)` then waits for the channel's EOF for at most `grace` seconds:
  True when it did not come (background children of the command still hold the channel's
  pipes: `nohup daemon &` without redirection). The channel is then *lingering*: it stays
  open, drained in the background, so those children are never killed by a closed pipe
  (SIGPIPE) and the caller gets the status at once.
- `timeout` (the whole command) and `idle_timeout` (no output at all for that long) end
  the wait with `timed_out`; the caller then kills the command's process group.
- The connection dropping while the command runs raises `ChannelLost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import asyncssh

from testbed.guest.capture import BoundedCapture
from testbed.guest.dialects import PID_MARK

LINGER_GRACE_S = 0.3
LINGER_KEEP = 4096


class ChannelLost(Exception):
    """The SSH connection went away while the command ran."""


class _PidMarker:
    """Feeds stderr through to `sink`, taking the session shell's pid off its first line."""

    def __init__(self, sink: BoundedCapture) -> None:
        self.sink = sink
        self.pid: int | None = None
        self._head = b""
        self._done = False

    def feed(self, chunk: bytes) -> None:
        if self._done:
            self.sink.feed(chunk)
            return
        self._head += chunk
        if b"\n" not in self._head and len(self._head) < 64:
            return
        self._done = True
        line, sep, rest = self._head.partition(b"\n")
        if line.startswith(PID_MARK) and sep:
            with contextlib.suppress(ValueError):
                self.pid = int(line[len(PID_MARK) :])
            self.sink.feed(rest)
        else:
            self.sink.feed(self._head)


class CommandChannel(asyncssh.SSHClientSession[bytes]):
    """The session object of one command's channel (see module docstring)."""

    def __init__(self, max_output: int, marker: bool) -> None:
        self.out = BoundedCapture(max_output)
        self.err = BoundedCapture(max_output)
        self._marker = _PidMarker(self.err) if marker else None
        self.exit_status: int | None = None
        self.lingering = False
        self.lingered = BoundedCapture(LINGER_KEEP)
        self._exited = asyncio.Event()
        self._eof = asyncio.Event()
        self._closed = asyncio.Event()
        self._lost: Exception | None = None
        self._last_output = time.monotonic()
        self.chan: asyncssh.SSHClientChannel[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._marker.pid if self._marker is not None else None

    # -- asyncssh callbacks ------------------------------------------------------------
    def connection_made(self, chan: asyncssh.SSHClientChannel[bytes]) -> None:
        self.chan = chan

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        self._last_output = time.monotonic()
        if self.lingering:
            self.lingered.feed(data)
        elif datatype == asyncssh.EXTENDED_DATA_STDERR:
            (self._marker or self.err).feed(data)
        else:
            self.out.feed(data)

    def eof_received(self) -> bool:
        self._eof.set()
        return False

    def exit_status_received(self, status: int) -> None:
        self.exit_status = status
        self._exited.set()

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        self.exit_status = 128 + _SIGNALS.get(signal, 0)
        self._exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc
        self._closed.set()
        self._eof.set()

    # -- waiting -----------------------------------------------------------------------
    async def wait(self, timeout: float | None, idle_timeout: float | None) -> str:
        """`exited`, `timeout` or `idle` (see module docstring); `ChannelLost` if the
        connection dropped first."""
        t0 = time.monotonic()
        while not self._exited.is_set():
            if self._closed.is_set() and self._lost is not None:
                raise ChannelLost(str(self._lost) or type(self._lost).__name__)
            if self._closed.is_set():
                break  # closed cleanly without a status (e.g. killed by a signal sshd did not report)
            now = time.monotonic()
            if timeout is not None and now - t0 >= timeout:
                return "timeout"
            if idle_timeout is not None and now - self._last_output >= idle_timeout:
                return "idle"
            waits = [0.5]
            if timeout is not None:
                waits.append(timeout - (now - t0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wait_any(), max(0.01, min(waits)))
        return "exited"

    async def settle(self, grace: float = LINGER_GRACE_S) -> bool:
        """After the exit status: wait up to `grace` seconds for EOF; True (and lingering
        from now on) when background children still hold the channel."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._eof.wait(), grace)
        self.lingering = not self._eof.is_set()
        return self.lingering

    async def _wait_any(self) -> None:
        exited = asyncio.ensure_future(self._exited.wait())
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait({exited, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            closed.cancel()

    async def drain(self, timeout: float) -> None:
        """Give output still in flight up to `timeout` seconds to arrive (after a kill)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._eof.wait(), timeout)

    async def closed(self) -> None:
        await self._closed.wait()

    def close(self) -> None:
        if self.chan is not None:
            self.chan.close()


_SIGNALS: dict[str, int] = {"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "SEGV": 11, "PIPE": 13, "TERM": 15}


def session_members_command(sid: int) -> str:
    """POSIX sh that lists the processes of session `sid` as `PID ARGS` lines: through
    procps' `ps` where it works, else by reading /proc directly (busybox guests)."""
    return (
        'out=$(ps -e -o pid=,sid=,args= 2>/dev/null) && '
        f"{{ printf '%s\\n' \"$out\" | awk '$2 == {sid} {{ $2 = \"\"; print }}'; exit 0; }}; "
        "for p in /proc/[0-9]*; do "
        'read -r l < "$p/stat" 2>/dev/null || continue; r=${l##*) }; set -- $r; '
        f'[ "$4" = {sid} ] && printf "%s %s\\n" "${{p#/proc/}}" "$(tr "\\0" " " < "$p/cmdline" 2>/dev/null)"; '
        "done; true"
    )


def parse_members(text: str) -> list[dict[str, Any]]:
    """`[{pid, args}]` from `session_members_command`'s output."""
    found: list[dict[str, Any]] = []
    for line in text.splitlines():
        pid, _, args = line.strip().partition(" ")
        if pid.isdigit():
            found.append({"pid": int(pid), "args": args.strip()[:300]})
    return found

"""Commands over a serial console, with the exit status, time and output bounds of SSH's.

For devices whose SSH cannot be enabled: `ConsoleChannel.exec(command) -> ExecResult` runs
a command in the console's POSIX shell (after `ConsoleSession.login`). Protocol, per
command, with a random NONCE and markers made of the byte 0x1e that the shell's `printf`
prints but no echo of the typed text contains (the typed text holds the four characters
`\\036`, never the byte):

1. the command (and stdin, when given) is written to files under `work_dir` by
   `printf '<octal escapes>' >> FILE` lines of at most `CHUNK` bytes each, every line
   acknowledged by `\\036K<seq>` before the next is sent (so no input is lost and no tty
   line limit is met);
2. `printf '\\036B<nonce>\\n'; sh CMD <IN 2>ERR; printf '\\036E<nonce> %d\\n' $?;
   cat ERR; printf '\\036F<nonce>\\n'`: stdout is what lies between B and E, the exit
   status is E's number, stderr lies between E and F.

Bounds: stdout and stderr are kept with `BoundedCapture` (head and tail, as over SSH). The
time limits count from step 2 (uploading the command is not the command's time). At the
deadline (or after `idle_timeout` without output) Ctrl-C goes to the console (SIGINT
to the foreground job; the interactive shell drops the rest of the line, so the E/F
trailer is typed again), then Ctrl-\\ after `INTERRUPT_GRACE_S`; the result is
`timed_out` with no exit status once the F marker arrives, and stdout is what the command
printed before the interrupt (what follows is the console's own echo); an interrupt that
reaches the shell before step 2's line ran (no B marker) is closed by the retyped trailer
alike. A command that survives both leaves the console unusable: `ConsoleLost`. Carriage
returns the tty adds (`onlcr`) are taken out when `stty -onlcr` could not turn them off.
Commands run one at a time.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from datetime import UTC, datetime

from testbed.guest.capture import BoundedCapture
from testbed.guest.console import ConsoleLost, ConsoleSession, ConsoleTimeout
from testbed.guest.result import ExecResult

CHUNK = 240
INTERRUPT_GRACE_S = 5.0
ACK_TIMEOUT_S = 30.0
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ,._+:@/=-")


def printf_escape(data: bytes) -> str:
    """`data` as a printf(1) format that prints exactly those bytes (octal escapes for all
    but a safe set, so the text survives any shell quoting and any tty line discipline)."""
    return "".join(chr(b) if b in _SAFE else f"\\{b:03o}" for b in data)


def write_file_lines(path: str, data: bytes, ack: str) -> list[tuple[str, str]]:
    """(shell line, its acknowledgement token) that write `data` to `path` in chunks."""
    lines = [(f": > {path}; printf '\\036K%s\\n' {ack}0", f"{ack}0")]
    for i in range(0, len(data), CHUNK):
        token = f"{ack}{i // CHUNK + 1}"
        lines.append((f"printf '{printf_escape(data[i : i + CHUNK])}' >> {path}; printf '\\036K%s\\n' {token}", token))
    return lines


class ConsoleChannel:
    """Commands over a logged-in console (see module docstring)."""

    def __init__(self, session: ConsoleSession, work_dir: str = "/run/testbed") -> None:
        self.session = session
        self.work = f"{work_dir.rstrip('/')}/console"
        self._lock = asyncio.Lock()
        self._ready = False
        self._crlf = True

    async def prepare(self) -> None:
        """Once: the work directory, and tty output without added carriage returns."""
        token = secrets.token_hex(4)
        self.session.screen.mark()
        await self.session.send_line(
            f"mkdir -p {self.work} && stty -onlcr 2>/dev/null; printf '\\036S%s %s\\n' {token} $?"
        )
        text = await self._wait_marker(re.compile(rb"\x1eS" + token.encode() + rb" (\d+)\r?\n"), ACK_TIMEOUT_S)
        self._crlf = text.group(1) != b"0"
        self._ready = True

    async def _wait_marker(self, regex: re.Pattern[bytes], timeout: float) -> re.Match[bytes]:
        deadline = time.monotonic() + timeout
        while True:
            found = regex.search(self.session.screen.raw)
            if found:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConsoleTimeout(f"{self.session.name}: console did not acknowledge within {timeout:.0f} s")
            await self.session.read_some(left)

    async def _write_file(self, path: str, data: bytes) -> None:
        ack = secrets.token_hex(3)
        for line, token in write_file_lines(path, data, ack):
            self.session.screen.mark()
            await self.session.send_line(line)
            await self._wait_marker(re.compile(b"\x1eK" + token.encode() + rb"\r?\n"), ACK_TIMEOUT_S)

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = 120.0,
        max_output: int = 64 * 1024,
        stdin: bytes | None = None,
        idle_timeout: float | None = None,
    ) -> ExecResult:
        async with self._lock:
            if not self._ready:
                await self.prepare()
            started_at = datetime.now(UTC)
            t0 = time.monotonic()
            await self._write_file(f"{self.work}/c", command.encode())
            source = "/dev/null"
            if stdin is not None:
                await self._write_file(f"{self.work}/i", stdin)
                source = f"{self.work}/i"
            nonce = secrets.token_hex(6)
            self.session.screen.mark()
            run_line = f"printf '\\036B%s\\n' {nonce}; sh {self.work}/c <{source} 2>{self.work}/e"
            await self.session.send_line(f"{run_line}; {self._trailer(nonce, '$?')}")
            run = _Run(nonce.encode(), max_output, self._trailer(nonce, "130"))
            # the limits count from the command line, not from uploading the command
            status, how = await self._collect(run, timeout, idle_timeout, time.monotonic())
            return ExecResult(
                command=command,
                exit_code=status if how == "exited" else None,
                stdout=run.out.text(),
                stderr=run.err.text(),
                started_at=started_at,
                duration_ms=int((time.monotonic() - t0) * 1000),
                timed_out=how != "exited",
                stdout_truncated=run.out.truncated,
                stderr_truncated=run.err.truncated,
                idle_timed_out=how == "idle",
            )

    def _trailer(self, nonce: str, status: str) -> str:
        return f"printf '\\036E%s %d\\n' {nonce} {status}; cat {self.work}/e; printf '\\036F%s\\n' {nonce}"

    async def _interrupt(self, run: _Run) -> None:
        """Ctrl-C to the foreground job; an interactive shell then drops the rest of the
        command line, so the trailer (E and F markers) is typed again."""
        run.interrupt(self._crlf)
        await self.session.send(b"\x03")
        await asyncio.sleep(0.3)
        await self.session.send_line(run.trailer)

    async def _collect(
        self, run: _Run, timeout: float | None, idle_timeout: float | None, t0: float
    ) -> tuple[int | None, str]:
        """Read until the F marker; interrupt at the deadline (see module docstring)."""
        how = "exited"
        interrupted_at: float | None = None
        last_output = time.monotonic()
        while not run.finished:
            now = time.monotonic()
            if interrupted_at is None:
                if timeout is not None and now - t0 >= timeout:
                    how = "timeout"
                elif idle_timeout is not None and now - last_output >= idle_timeout:
                    how = "idle"
                if how != "exited":
                    interrupted_at = now
                    await self._interrupt(run)
            elif now - interrupted_at >= 2 * INTERRUPT_GRACE_S:
                raise ConsoleLost(f"{self.session.name}: a console command ignored Ctrl-C and Ctrl-\\")
            elif now - interrupted_at >= INTERRUPT_GRACE_S and not run.quit_sent:
                run.quit_sent = True
                await self.session.send(b"\x1c")
            data = await self.session.read_some(0.5)
            self.session.screen.mark()
            if data:
                last_output = time.monotonic()
                run.feed(data, self._crlf)
        return run.status, how


class _Run:
    """The B/E/F framing of one command's console output (see module docstring)."""

    KEEP = 64  # bytes held back while a marker may still be arriving in pieces

    def __init__(self, nonce: bytes, max_output: int, trailer: str) -> None:
        self.trailer = trailer
        n = re.escape(nonce)
        self.begin = re.compile(b"\x1eB" + n + rb"\r?\n")
        self.end = re.compile(b"\x1eE" + n + rb" (\d+)\r?\n")
        self.final = re.compile(b"\x1eF" + n + rb"\r?\n")
        self.out = BoundedCapture(max_output)
        self.err = BoundedCapture(max_output)
        self.buffer = b""
        self.stage = "before"
        self.status: int | None = None
        self.finished = False
        self.quit_sent = False
        self.interrupted = False  # from then on stdout is the console's echo: not kept

    def interrupt(self, crlf: bool) -> None:
        """Keep what the command printed so far (up to a marker that may be arriving),
        then stop keeping stdout."""
        if self.stage == "out":
            cut = self.buffer.rfind(b"\x1e")
            cut = len(self.buffer) if cut < 0 else cut
            _emit(self.out, self.buffer[:cut], crlf)
            self.buffer = self.buffer[cut:]
        elif self.stage == "before":
            # Ctrl-C reached the shell before the command line ran (no B marker will come):
            # the retyped trailer's E and F markers still close the run.
            self.stage = "out"
        self.interrupted = True

    def feed(self, data: bytes, crlf: bool) -> None:
        self.buffer += data
        if self.stage == "before":
            found = self.begin.search(self.buffer)
            if found is None:
                self.buffer = self.buffer[-self.KEEP :]  # echo and prompts: not output
                return
            self.buffer = self.buffer[found.end() :]
            self.stage = "out"
        if self.stage == "out":
            if not self._section(self.end, None if self.interrupted else self.out, crlf):
                return
            self.stage = "err"
        if self.stage == "err" and self._section(self.final, self.err, crlf):
            self.finished = True

    def _section(self, closing: re.Pattern[bytes], sink: BoundedCapture | None, crlf: bool) -> bool:
        """Pass the buffer on to `sink` up to `closing` (True: found; its number, if any,
        is the status), or all but the last `KEEP` bytes (False)."""
        found = closing.search(self.buffer)
        if found is None:
            cut = len(self.buffer) - self.KEEP
            if cut > 0:
                if crlf and self.buffer[cut - 1 : cut] == b"\r":
                    cut -= 1
                _emit(sink, self.buffer[:cut], crlf)
                self.buffer = self.buffer[cut:]
            return False
        _emit(sink, self.buffer[: found.start()], crlf)
        if found.groups():
            self.status = int(found.group(1))
        self.buffer = self.buffer[found.end() :]
        return True


def _emit(sink: BoundedCapture | None, data: bytes, crlf: bool) -> None:
    if sink is not None:
        sink.feed(data.replace(b"\r\n", b"\n") if crlf else data)

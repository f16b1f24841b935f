"""A console for tests: a real program on a real pseudo-terminal (`ConsoleStream`).

`PtyConsole.spawn(argv)` starts `argv` as a session leader whose controlling terminal is
the pty's slave side (stdin, stdout and stderr), so the tty line discipline (echo, Ctrl-C
to the foreground job, `stty`) behaves as on a serial console. `LOGIN_SCRIPT` is a
getty-like login (`testbed login:`, `Password:`, `Login incorrect`) that then runs an
interactive POSIX shell with a device-like prompt: what testbed's console bootstrap meets
on the `frr-router-console` image, without a guest.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import subprocess
import termios

LOGIN_SCRIPT = r"""
while :; do
  printf 'Debian GNU/Linux 12 testbed ttyS0\n\ntestbed login: '
  read -r user || exit 1
  [ -n "$user" ] || continue  # Enter alone shows the prompt again, as agetty does
  printf 'Password: '
  stty -echo; read -r pw; stty echo; printf '\n'
  if [ "$user" = "${TB_USER:-root}" ] && [ "$pw" = "${TB_PASSWORD:-testbed}" ]; then break; fi
  sleep 1; printf '\nLogin incorrect\n'
done
exec env PS1='root@testbed:~# ' sh -i
"""


class PtyConsole:
    """See module docstring."""

    def __init__(self, master: int, proc: subprocess.Popen[bytes]) -> None:
        self.master = master
        self.proc = proc
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(master, self._readable)
        self._closed = False

    @classmethod
    async def spawn(cls, argv: list[str], env: dict[str, str] | None = None) -> PtyConsole:
        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[3] |= termios.ECHO | termios.ICANON | termios.ISIG
        termios.tcsetattr(slave, termios.TCSANOW, attrs)

        def controlling_tty() -> None:
            # A getty starts its shell with default signal actions; a harness started in the
            # background of a non-interactive shell inherits SIGINT and SIGQUIT *ignored*,
            # which would make Ctrl-C and Ctrl-\ on this console do nothing.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGQUIT, signal.SIG_DFL)
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=controlling_tty,
            env={**os.environ, **(env or {})},
            close_fds=True,
        )
        os.close(slave)
        os.set_blocking(master, False)
        return cls(master, proc)

    @classmethod
    async def login_shell(cls, user: str = "root", password: str = "testbed") -> PtyConsole:
        return await cls.spawn(["sh", "-c", LOGIN_SCRIPT], {"TB_USER": user, "TB_PASSWORD": password})

    def _readable(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: the other side is gone
            data = b""
        if not data:
            self._loop.remove_reader(self.master)
        self._queue.put_nowait(data)

    async def read(self) -> bytes:
        return await self._queue.get()

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = os.write(self.master, view)
            except BlockingIOError:
                await asyncio.sleep(0.01)
                continue
            view = view[sent:]

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self.master)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        await asyncio.to_thread(self.proc.wait)
        os.close(self.master)


class ReplayConsole:
    """A console that replays a transcript: `(expected input, output)` steps. It prints the
    first step's output at once; each later step's output comes when the input written so
    far ends with that step's expected input (so a test knows what the client typed, in
    order). `written` keeps every byte the client sent."""

    def __init__(self, steps: list[tuple[bytes | None, bytes]]) -> None:
        self.steps = list(steps)
        self.written = bytearray()
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._since = 0
        if self.steps and self.steps[0][0] is None:
            first = self.steps.pop(0)[1]
            if first:
                self._queue.put_nowait(first)

    async def read(self) -> bytes:
        return await self._queue.get()

    async def write(self, data: bytes) -> None:
        self.written += data
        if (
            self.steps
            and self.steps[0][0] is not None
            and bytes(self.written[self._since :]).endswith(self.steps[0][0])
        ):
            self._since = len(self.written)
            output = self.steps.pop(0)[1]
            if output:
                self._queue.put_nowait(output)

    async def close(self) -> None:
        self._queue.put_nowait(b"")

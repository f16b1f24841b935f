"""A serial console as a channel: prompt recognition, login, and bootstrap steps.

The console is any `ConsoleStream` (libvirt's console stream in
`testbed.hypervisor.console`; a pseudo-terminal running a real shell in tests). What the
device prints is kept in a `Screen`: bytes as they came (for command output) and a cleaned
tail for matching (ANSI escape sequences and carriage returns removed, the last
`SCREEN_KEEP` characters), so a prompt regex sees what a person would see.

Contracts of `ConsoleSession`:
- `expect(pattern, timeout)` waits until the cleaned text printed since the last mark
  matches `pattern` at its end (`$` anchors to the end of the output); it returns what was
  printed since the mark. Kernel messages printed after a prompt spoil the match; `login`
  wakes the console again (`wake`, a carriage return) every few seconds while nothing
  matches. A stream that ends raises `ConsoleLost`; a timeout raises `ConsoleTimeout`
  (both `HarnessError`s) with the screen's last lines, secrets never included.
- `login(spec)` gets to the device's prompt (or its `landing`, a menu the `enter` steps
  leave): it answers the login and password prompts with the spec's credentials, or finds
  a prompt already there (a console left logged in); a refused login is a `HarnessError`.
- `step(step, values)` sends one template step (`testbed.model.device.ConsoleStep`) with
  its fields filled and waits for its `expect` (default: the prompt).
Commands with an exit status, bounded in time and output, are `testbed.guest.consolexec`.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from typing import Protocol

from testbed.errors import HarnessError
from testbed.model.device import ConsoleSpec, ConsoleStep

SCREEN_KEEP = 8192
WAKE_EVERY_S = 5.0
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][A-Za-z0-9]|[=>NOPc78])")
_LOGIN_REFUSED = re.compile(r"Login incorrect|Permission denied|Authentication failure", re.IGNORECASE)


class ConsoleStream(Protocol):
    """A bidirectional byte stream to a console."""

    async def read(self) -> bytes:
        """Some bytes (waits for at least one); b"" once the stream has ended."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class ConsoleLost(HarnessError):
    """The console stream ended."""


class ConsoleTimeout(HarnessError):
    """The console did not show what was expected in time."""


def clean(data: bytes) -> str:
    """Console bytes as a person reads them: escape sequences and carriage returns out."""
    return _ANSI.sub(b"", data).replace(b"\r", b"").decode(errors="replace")


class Screen:
    """What the console printed: `raw` since the last mark, and a cleaned tail for matching."""

    def __init__(self) -> None:
        self.raw = bytearray()
        self._tail = b""

    def feed(self, data: bytes) -> None:
        self.raw += data
        self._tail = (self._tail + data)[-SCREEN_KEEP:]

    def mark(self) -> None:
        self.raw.clear()
        self._tail = b""

    def text(self) -> str:
        return clean(self._tail)

    def last_lines(self, n: int = 6) -> str:
        return "\n".join(self.text().splitlines()[-n:])


class ConsoleSession:
    """See module docstring. `name` labels errors (the node)."""

    def __init__(self, stream: ConsoleStream, name: str) -> None:
        self.stream = stream
        self.name = name
        self.screen = Screen()
        self._pending: asyncio.Task[bytes] | None = None
        self.closed = False

    async def read_some(self, timeout: float) -> bytes | None:
        """Bytes within `timeout` seconds, None if none came; `ConsoleLost` at the end."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(self.stream.read())
        done, _ = await asyncio.wait({self._pending}, timeout=max(0.0, timeout))
        if not done:
            return None
        task, self._pending = self._pending, None
        data = task.result()
        if not data:
            self.closed = True
            raise ConsoleLost(f"{self.name}: the console stream ended; screen: {self.screen.last_lines()!r}")
        self.screen.feed(data)
        return data

    async def send(self, text: str | bytes) -> None:
        await self.stream.write(text.encode() if isinstance(text, str) else text)

    async def send_line(self, text: str) -> None:
        await self.send(text + "\r")

    async def expect(self, pattern: str | re.Pattern[str], timeout: float, *, wake: str | None = None) -> str:
        """See module docstring; `wake` is sent every `WAKE_EVERY_S` while nothing matches."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        next_wake = time.monotonic() + WAKE_EVERY_S
        while True:
            text = self.screen.text()
            if regex.search(text):
                return text
            now = time.monotonic()
            if now >= deadline:
                raise ConsoleTimeout(
                    f"{self.name}: console did not show /{regex.pattern}/ within {timeout:.0f} s; "
                    f"screen ends: {self.screen.last_lines()!r}"
                )
            if wake is not None and now >= next_wake:
                await self.send(wake)
                next_wake = now + WAKE_EVERY_S
            await self.read_some(min(deadline, next_wake if wake is not None else deadline) - now)

    async def login(self, spec: ConsoleSpec) -> None:
        """Reach `spec.prompt` (see module docstring)."""
        deadline = time.monotonic() + spec.login_timeout_s
        choices = [spec.prompt] + ([spec.login_prompt] if spec.login_prompt else [])
        either = re.compile("|".join(f"(?:{c})" for c in choices))
        self.screen.mark()
        await self.send(spec.wake)
        seen = await self.expect(either, deadline - time.monotonic(), wake=spec.wake)
        if re.search(spec.prompt, seen):
            return
        assert spec.user is not None  # ConsoleSpec's validator: a login prompt needs a user
        self.screen.mark()
        await self.send_line(spec.user)
        after_user = re.compile(f"(?:{spec.password_prompt})|(?:{spec.prompt})")
        seen = await self.expect(after_user, deadline - time.monotonic())
        if not re.search(spec.prompt, seen):
            self.screen.mark()
            await self.send_line(spec.password or "")
            landed = [spec.prompt] + ([spec.landing] if spec.landing else [])
            after_password = landed + ([spec.login_prompt] if spec.login_prompt else [])
            seen = await self.expect("|".join(f"(?:{p})" for p in after_password), deadline - time.monotonic())
            if _LOGIN_REFUSED.search(seen) or not any(re.search(p, seen) for p in landed):
                raise HarnessError(f"{self.name}: console login as {spec.user} was refused")

    async def step(self, step: ConsoleStep, values: Mapping[str, str], prompt: str) -> str:
        """Run one bootstrap step; what the console printed for it."""
        self.screen.mark()
        await self.send_line(step.send.format_map(dict(values)))
        try:
            return await self.expect(step.expect or prompt, step.timeout_s)
        except ConsoleTimeout as exc:
            shown = "(secret)" if step.secret else step.send[:80]
            raise ConsoleTimeout(f"bootstrap step {shown!r}: {exc}") from exc

    async def close(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        await self.stream.close()

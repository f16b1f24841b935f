"""Squid as a child process of testbed: started, reconfigured and stopped by its pid.

Contracts:
- `SquidProxy` is an async context manager. Entering writes the configuration
  (`testbed.egress.squidconf`) into its state directory, starts `squid -N -f CONF` (in the
  network namespace named by `netns`, through `nsenter`, when given) and returns once Squid
  says in its cache.log that it accepts connections on its port; leaving stops it: SIGTERM
  to its pid, SIGKILL after `stop_timeout_s`. Nothing is ever killed by name.
- `set_labs(labs)` rewrites the configuration and has Squid reload it (SIGHUP); it returns
  once Squid accepts connections again. Transfers in flight survive a reload. Calls are
  serialised.
- Squid failing to start or to reload (it exited, or did not listen in `start_timeout_s`)
  is a `HarnessError` carrying the end of its cache.log.
- `free_port(netns)` asks the kernel for a free loopback port in that namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Self

from testbed.egress.squidconf import LabRule, SquidLayout, render_config
from testbed.errors import HarnessError

ACCEPTING = "Accepting HTTP Socket connections at"


def in_netns(argv: Sequence[str], netns: str | None) -> list[str]:
    """`argv` run in the network namespace file `netns` (None: this process's namespace)."""
    if netns is None:
        return list(argv)
    return ["nsenter", f"--net={netns}", "--", *argv]


async def free_port(netns: str | None) -> int:
    """A TCP port free on 127.0.0.1 of namespace `netns` (bound, then released)."""
    code = "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
    proc = await asyncio.create_subprocess_exec(
        *in_netns([sys.executable, "-c", code], netns),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise HarnessError(f"cannot find a free port for the egress proxy: {err.decode(errors='replace').strip()}")
    return int(out.decode().strip())


async def stop_process(proc: asyncio.subprocess.Process, timeout_s: float) -> None:
    """SIGTERM `proc` by its pid, SIGKILL after `timeout_s`; waits for it to end."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


class SquidProxy:
    """See the module docstring."""

    def __init__(
        self,
        layout: SquidLayout,
        labs: Sequence[LabRule] = (),
        *,
        squid: str = "squid",
        netns: str | None = None,
        start_timeout_s: float = 30.0,
        stop_timeout_s: float = 10.0,
    ) -> None:
        self.layout = layout
        self.labs: tuple[LabRule, ...] = tuple(labs)
        self.squid = squid
        self.netns = netns
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.config_path = layout.state_dir / "squid.conf"
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._write_config()
        before = self._accepting_count()
        output = (self.layout.state_dir / "squid.out").open("ab")
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *in_netns([self.squid, "-N", "-f", str(self.config_path)], self.netns),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=output,
            )
        except OSError as exc:
            raise HarnessError(f"cannot start Squid ({self.squid}): {exc}; `apt-get install squid`") from exc
        finally:
            output.close()
        try:
            await self._until_accepting(before, "start")
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        if self._proc is not None:
            await stop_process(self._proc, self.stop_timeout_s)
            self._proc = None

    async def set_labs(self, labs: Sequence[LabRule]) -> None:
        """Reconfigure for `labs`; returns when Squid accepts connections again."""
        async with self._lock:
            if self._proc is None or self._proc.returncode is not None:
                raise HarnessError("the egress proxy (Squid) is not running")
            self.labs = tuple(labs)
            self._write_config()
            before = self._accepting_count()
            self._proc.send_signal(signal.SIGHUP)
            await self._until_accepting(before, "reload its configuration")

    def _write_config(self) -> None:
        text = render_config(self.layout, self.labs)
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o644)
        os.replace(tmp, self.config_path)

    def _cache_log_text(self) -> str:
        try:
            return self.layout.cache_log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def _accepting_count(self) -> int:
        marker = f"{ACCEPTING} "
        return sum(1 for line in self._cache_log_text().splitlines() if marker in line)

    async def _until_accepting(self, before: int, what: str) -> None:
        assert self._proc is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout_s
        while self._accepting_count() <= before:
            if self._proc.returncode is not None:
                raise HarnessError(f"Squid exited ({self._proc.returncode}) while trying to {what}: {self._tail()}")
            if loop.time() > deadline:
                raise HarnessError(f"Squid did not {what} within {self.start_timeout_s:.0f} s: {self._tail()}")
            await asyncio.sleep(0.05)

    def _tail(self, lines: int = 15) -> str:
        text = self._cache_log_text()
        out = self.layout.state_dir / "squid.out"
        if out.exists():
            text += out.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.strip().splitlines()[-lines:]) or "(no output)"

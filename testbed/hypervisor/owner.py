"""Who owns a lab, and whether that owner still exists.

An owner is a live process on this host, or a *detached* lab kept on purpose (`testbed lab
up`), which only `testbed lab down` removes.

A process's liveness is its **owner lock**: on first use each process creates a lock file
`$TESTBED_HOME/owners/<token>.lock` and holds an exclusive `flock` on it until it exits (the
kernel drops it then, however the process dies). Another process decides "alive" by trying
to take that lock without blocking: it fails while the owner lives. Unlike a pid, this is
right across PID namespaces (`scripts/netns-run` runs each invocation under `unshare
--pid`, where two unrelated processes can both be pid 5) and across pid reuse, as long as
both sides see the same `TESTBED_HOME`. Records written before owner locks existed (no
`lock`) fall back to pid + start time from /proc, which is right within one PID namespace.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from testbed.config import testbed_home

_held: dict[str, tuple[Path, int, int]] = {}
"""The current process's owner lock per owners directory: (path, fd held open, pid)."""


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot, or None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    # Field 2 (comm) may contain spaces and parentheses: split after the last ')'.
    rest = stat.rsplit(")", 1)[-1].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def owners_dir() -> Path:
    """`$TESTBED_HOME/owners` (the same default as `testbed.config.Settings`)."""
    return testbed_home() / "owners"


def process_lock(directory: Path | None = None) -> Path:
    """This process's owner lock file in `directory` (default `owners_dir()`), created and
    locked on first call; the lock is held until the process exits. A forked child makes
    its own (it is another owner)."""
    directory = directory or owners_dir()
    held = _held.get(str(directory))
    if held is not None and held[2] == os.getpid():
        return held[0]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{uuid.uuid4().hex}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, f"{os.getpid()}\n".encode())
    _held[str(directory)] = (path, fd, os.getpid())
    return path


def lock_is_held(path: Path) -> bool:
    """True while some process holds the owner lock at `path`. A missing file is not held."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: never take a live owner for dead
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def remove_dead_locks(directory: Path | None = None) -> list[Path]:
    """Delete lock files no process holds (the reaper's housekeeping); returns them."""
    directory = directory or owners_dir()
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    for path in directory.glob("*.lock"):
        if not lock_is_held(path):
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed


@dataclass(frozen=True)
class Owner:
    pid: int
    starttime: int
    host: str
    detached: bool = False
    lock: str = ""  # the owner process's lock file (empty in records older than owner locks)

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(pid=pid, starttime=process_start_time(pid) or 0, host=socket.gethostname(), lock=str(process_lock()))

    def detach(self) -> Owner:
        return Owner(self.pid, self.starttime, self.host, detached=True, lock=self.lock)

    def is_alive(self) -> bool:
        """Detached owners are alive until `lab down`; processes while their owner lock is
        held (or, for old records, while their pid + start time live). An owner recorded on
        another host is treated as alive (it cannot be checked here)."""
        if self.detached:
            return True
        if self.host != socket.gethostname():
            return True
        if self.lock:
            return lock_is_held(Path(self.lock))
        return process_start_time(self.pid) == self.starttime

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Owner:
        return cls(
            pid=int(data["pid"]),
            starttime=int(data["starttime"]),
            host=str(data["host"]),
            detached=bool(data.get("detached", False)),
            lock=str(data.get("lock") or ""),
        )

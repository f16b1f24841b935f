"""The native snapshot helper, `tbprobe`: C sources in this directory, built on the lab host
into one static binary that ``snapshot.sh`` runs on the guest in place of what costs most
under emulation (QEMU TCG): the output filter's awk program, the walk's find + sha256sum +
grep, and the sysctl probe's grep. Each of its commands gives the output its counterpart
gives, byte for byte (``tests/unit/probes/test_native.py`` runs the script both ways on
this host and compares), so parsing, diffs and residue cannot tell the two apart.

Contract of `helper_binary(tools_dir)`: the path of the helper built from this source tree
(`tools_dir/tbprobe-<source hash>`, built once with the host's C compiler, `cc -static`,
under a lock), or None when it cannot be built here (no compiler or no static C library:
logged once). Without it snapshots run the script's portable path: the same data, slower.
`TESTBED_NATIVE_PROBE=0` turns it off.

On the guest the helper lives in `GUEST_DIR` (``/dev/shm/.testbed``: a tmpfs, so gone at
the next boot, and one that allows exec, unlike /run), which the snapshot never lists
(``TESTBED_PROBE_HIDE``). It is a static binary of the host's architecture: a guest of
another architecture, or one whose /dev/shm is not executable, fails the upload's check
(`tbprobe version`) and keeps the portable path. The guest's own awk, find and grep are
trusted as much as this file (an agent that is root can replace any of them).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from testbed.config import native_probe_enabled

log = logging.getLogger(__name__)

SOURCE_DIR = Path(__file__).parent
CFLAGS = ("-O2", "-static", "-s", "-std=gnu11", "-Wall")
GUEST_DIR = "/dev/shm/.testbed"
"""Where the helper is placed on a guest (see module docstring)."""

_lock = threading.Lock()
_built: dict[Path, Path | None] = {}


def sources() -> list[Path]:
    """The C sources and headers the helper is built from."""
    return sorted([*SOURCE_DIR.glob("*.c"), *SOURCE_DIR.glob("*.h")])


def source_key() -> str:
    """A hash of the sources and flags: a change makes a new binary name."""
    digest = hashlib.sha256(" ".join(CFLAGS).encode())
    for path in sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def binary_name() -> str:
    """The helper's file name here and on the guest."""
    return f"tbprobe-{source_key()}"


def build(dest: Path) -> None:
    """Compile the helper into `dest` (atomically). Raises `OSError` when no compiler is
    found and `subprocess.CalledProcessError` (with the compiler's output) when it fails."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise FileNotFoundError("no C compiler (cc or gcc) on PATH")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        out = Path(tmp) / dest.name
        argv = [compiler, *CFLAGS, "-o", str(out), *(str(p) for p in sources() if p.suffix == ".c")]
        subprocess.run(argv, check=True, capture_output=True, text=True, timeout=300)
        os.replace(out, dest)


def helper_binary(tools_dir: Path) -> Path | None:
    """See module docstring."""
    if not native_probe_enabled():
        return None
    with _lock:
        if tools_dir in _built:
            return _built[tools_dir]
        dest = tools_dir / binary_name()
        if not dest.is_file():
            try:
                _build_locked(dest)
            except (OSError, subprocess.SubprocessError) as exc:
                detail = getattr(exc, "stderr", "") or str(exc)
                log.warning("native snapshot helper not built (snapshots take the portable path): %s", detail[-500:])
                _built[tools_dir] = None
                return None
        _built[tools_dir] = dest
        return dest


def _build_locked(dest: Path) -> None:
    """Build `dest` unless another process does it first (a lock file beside it)."""
    import fcntl

    dest.parent.mkdir(parents=True, exist_ok=True)
    with (dest.parent / ".build.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not dest.is_file():
            build(dest)

"""qcow2 linked clones: an overlay whose backing file is the read-only base image.

Contract: `create_overlay` never copies the base (its cost is independent of the base's
size) and refuses to overwrite an existing file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from testbed.errors import HarnessError


async def create_overlay(base: Path, overlay: Path, *, size_mb: int | None = None) -> Path:
    """Create `overlay` (qcow2) backed by `base` (qcow2, absolute path)."""
    if overlay.exists():
        raise HarnessError(f"overlay {overlay} already exists")
    overlay.parent.mkdir(parents=True, exist_ok=True)
    argv = ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(base.resolve()), str(overlay)]
    if size_mb is not None:
        argv.append(f"{size_mb}M")
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    if proc.returncode != 0:
        raise HarnessError(f"qemu-img create {overlay} failed: {err.decode(errors='replace').strip()}")
    return overlay


def remove_files(paths: list[Path]) -> list[str]:
    """Remove files that exist; returns the paths removed."""
    removed = []
    for path in paths:
        try:
            path.unlink()
            removed.append(str(path))
        except FileNotFoundError:
            continue
    return removed

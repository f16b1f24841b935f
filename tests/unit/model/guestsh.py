"""Run generated check scripts on this machine as a guest would, with stand-in tools.

`GuestSh` builds a search path of real basic tools (awk, grep, stat, curl, ...: symlinks)
plus fake guest tools written as small shell scripts (systemctl, rc-service, dpkg-query,
ss, vtysh, ...), and a fake root for the system files a script reads itself
(`TESTBED_CHECK_ROOT`). `run(script, shell)` executes the script with `shell -c`, as sshd
runs a harness command in the session shell, and returns (exit status, last line).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

BASIC_TOOLS = (
    "sh", "awk", "grep", "date", "sleep", "tail", "head", "tr", "cut", "id", "stat", "mktemp", "rm", "cat",
    "getent", "env", "curl", "timeout", "printf", "ls", "mkdir", "chmod", "expr", "seq", "true", "false",
)  # fmt: skip

SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]


class GuestSh:
    def __init__(self, tmp_path: Path, *, without: tuple[str, ...] = ()) -> None:
        self.bin = tmp_path / "bin"
        self.root = tmp_path / "root"
        self.bin.mkdir(parents=True)
        self.root.mkdir()
        for tool in BASIC_TOOLS:
            real = shutil.which(tool)
            if real and tool not in without:
                (self.bin / tool).symlink_to(real)

    def tool(self, name: str, body: str) -> None:
        """A fake guest tool: `body` is sh text run with the tool's arguments."""
        path = self.bin / name
        path.unlink(missing_ok=True)  # never write through a symlink made by real()
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)

    def real(self, name: str, target: str | None = None) -> None:
        """Put the real `target` (default: `name` on this machine) on the path as `name`."""
        found = target or shutil.which(name)
        assert found, f"{name} is not installed here"
        (self.bin / name).unlink(missing_ok=True)
        (self.bin / name).symlink_to(found)

    def python(self) -> None:
        self.real("python3", sys.executable)

    def file(self, relative: str, text: str) -> Path:
        """A file under the fake root (`/etc/fstab` → ROOT/etc/fstab)."""
        path = self.root / relative.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def run(self, script: str | None, shell: str = "sh", timeout: float = 60) -> tuple[int, str]:
        assert script is not None
        env = {"TESTBED_CHECK_PATH": str(self.bin), "TESTBED_CHECK_ROOT": str(self.root), "HOME": str(self.root)}
        proc = subprocess.run(
            [shutil.which(shell) or shell, "-c", script],
            env={**env, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        lines = proc.stdout.strip().splitlines()
        return proc.returncode, (lines[-1] if lines else proc.stderr.strip())

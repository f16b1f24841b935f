"""The command line writes nothing of its own dependencies' warnings before its output."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_cli_and_ssh_writes_nothing_to_stderr() -> None:
    # asyncssh under cryptography >= 51 warns on import; scripts read `testbed launch`'s first
    # line as "job ID" (this broke three VM tests when cryptography 51 was released)
    proc = subprocess.run(
        [sys.executable, "-c", "import testbed.cli, testbed.guest.ssh, asyncssh"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stderr == ""

"""Owner liveness by owner lock: right across PID namespaces and pid reuse."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.hypervisor.owner import Owner, lock_is_held, process_lock, remove_dead_locks

CHILD = """
import sys, time
from testbed.hypervisor.owner import Owner
owner = Owner.current()
print(owner.pid, owner.starttime, owner.lock, flush=True)
sys.stdin.readline()
"""


def _spawn(argv_prefix: list[str], home: Path) -> tuple[subprocess.Popen[str], Owner]:
    env = {**os.environ, "TESTBED_HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    proc = subprocess.Popen(
        [*argv_prefix, sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    pid, starttime, lock = proc.stdout.readline().split()
    return proc, Owner(int(pid), int(starttime), os.uname().nodename, lock=lock)


def _end(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(timeout=30)


def test_current_process_is_alive_and_lock_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path))
    first = process_lock()
    assert process_lock() == first and first.parent == tmp_path / "owners"
    owner = Owner.current()
    assert owner.lock == str(first) and owner.is_alive()
    assert Owner.from_dict(owner.to_dict()) == owner


def test_owner_dies_with_its_process(tmp_path: Path) -> None:
    proc, owner = _spawn([], tmp_path)
    assert owner.is_alive()
    _end(proc)
    assert not owner.is_alive()
    assert remove_dead_locks(tmp_path / "owners") == [Path(owner.lock)]
    assert not lock_is_held(Path(owner.lock))  # a missing lock file is not held


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare(1)")
def test_two_pid_namespaces_sharing_a_home_never_take_each_other_for_dead(tmp_path: Path) -> None:
    """Two invocations wrapped like scripts/netns-run (`unshare --pid --fork`): inside its
    namespace each is a low pid that means another process (or nothing) outside it."""
    wrap = ["unshare", "--pid", "--fork", "--mount-proc"]
    a, owner_a = _spawn(wrap, tmp_path)
    b, owner_b = _spawn(wrap, tmp_path)
    try:
        assert owner_a.pid == owner_b.pid  # the same pid in two namespaces
        legacy = Owner(owner_a.pid, owner_a.starttime, owner_a.host)  # pid-only record
        assert not legacy.is_alive()  # what the pid check alone would wrongly conclude here
        assert owner_a.is_alive() and owner_b.is_alive()
        _end(a)
        deadline = time.monotonic() + 10
        while owner_a.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not owner_a.is_alive()
        assert owner_b.is_alive()
    finally:
        for proc in (a, b):
            if proc.poll() is None:
                _end(proc)

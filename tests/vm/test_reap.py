"""Leak-proofing: a lab holder killed with SIGKILL, then `testbed reap`, leaves nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT, assert_clean, leftovers, overlay_files, run_cli

pytestmark = pytest.mark.vm


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigkill_of_ready_lab_holder_then_reap(vm_home: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.vm.lab_holder", "single"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()
        assert line.strip() == "READY", line
        assert len(leftovers(vm_home)["domains"]) == 1
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    # autodestroy: libvirt kills the domain with the connection; the rest waits for the reaper
    _wait_for(lambda: not leftovers(vm_home)["domains"], 30, "the autodestroyed domain to vanish")
    left = leftovers(vm_home)
    assert left["networks"] and left["labs"] and left["leases"] and overlay_files(vm_home)
    dry = run_cli("reap", "--dry-run").stdout
    assert "would remove network" in dry
    assert leftovers(vm_home)["networks"], "dry run must not remove anything"
    run_cli("reap")
    assert_clean(vm_home)
    assert not overlay_files(vm_home)


def test_sigkill_of_lab_up_mid_boot_then_reap(vm_home: Path) -> None:
    """`lab up` starts domains without autodestroy: the reaper must destroy them itself."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "testbed.cli", "lab", "up", "single", "--name", "killed"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        try:
            _wait_for(lambda: bool(leftovers(vm_home)["domains"]), 400, "the domain to be created")
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        time.sleep(2)
        assert leftovers(vm_home)["domains"], "a domain started without autodestroy outlives its creator"
        out = run_cli("reap").stdout
        assert "removed domain" in out
        assert_clean(vm_home)
    finally:
        # whatever failed above, leave nothing for the next test on this worker to trip over
        run_cli("reap", check=False)

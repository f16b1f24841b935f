"""Choose the accelerator by a real probe, never by the presence of /dev/kvm.

The probe starts a tiny diskless QEMU guest under the candidate accelerator. When a Linux
kernel is at hand (one cached with an image, or the host's /boot/vmlinuz-*) the guest boots
it and must print "Linux version" on its serial port: on the project's CI machines KVM runs
the firmware and the kernel's real-mode setup, then hangs when entering long mode, so only
a kernel probe catches it. Without a kernel the probe falls back to SeaBIOS's banner on the
debug port (0x402), and says that it is the weaker probe. `TESTBED_ACCEL=kvm|tcg` overrides.
Results are cached per QEMU binary and kernel in `$TESTBED_HOME/accel.json`.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.config import accel_override

QEMU = "qemu-system-x86_64"
RHEL_QEMU = "/usr/libexec/qemu-kvm"  # RHEL-family hosts ship QEMU only under this name


def qemu_binary() -> str | None:
    """The local x86_64 QEMU the probe runs: qemu-system-x86_64 on PATH, else qemu-kvm."""
    found = shutil.which(QEMU)
    if found is None and os.access(RHEL_QEMU, os.X_OK):
        return RHEL_QEMU
    return found


PROBE_TIMEOUT_S = 12.0


@dataclass(frozen=True)
class AccelChoice:
    accel: str  # "kvm" (libvirt domain type kvm) or "qemu" (TCG)
    reason: str

    @property
    def label(self) -> str:
        return "kvm" if self.accel == "kvm" else "tcg"


def find_probe_kernel(images_dir: Path | None = None) -> Path | None:
    """A Linux kernel to boot in the probe: from the image cache, else the host's /boot."""
    candidates: list[Path] = []
    if images_dir is not None and images_dir.exists():
        candidates += sorted(images_dir.glob("*/*/vmlinuz"))
    candidates += sorted(Path("/boot").glob("vmlinuz-*"))
    for path in candidates:
        if os.access(path, os.R_OK):
            return path
    return None


def _probe_argv(qemu: str, accel: str, log: Path, kernel: Path | None) -> tuple[list[str], bytes, str]:
    """(argv, the marker that shows life in the log, what it means) for one probe."""
    common = [qemu, "-accel", accel, "-m", "128", "-display", "none", "-nodefaults", "-no-user-config"]
    common += ["-monitor", "none"]
    if kernel is not None:
        append = "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1"
        argv = [*common, "-serial", f"file:{log}", "-kernel", str(kernel), "-append", append]
        return argv, b"Linux version", f"kernel {kernel.name} started"
    debugcon = ["-chardev", f"file,id=dbg,path={log}", "-device", "isa-debugcon,iobase=0x402,chardev=dbg"]
    return [*common, "-serial", "none", *debugcon], b"SeaBIOS", "firmware ran (no kernel found for the stronger probe)"


async def probe(accel: str, timeout: float = PROBE_TIMEOUT_S, kernel: Path | None = None) -> tuple[bool, str]:
    """Boot a diskless guest with `-accel ACCEL`; True when it reached the kernel (or, with
    no kernel, its firmware)."""
    qemu = qemu_binary()
    if qemu is None:
        return False, f"neither {QEMU} nor {RHEL_QEMU} found"
    with tempfile.TemporaryDirectory(prefix="testbed-accel-") as tmp:
        log = Path(tmp) / "probe.log"
        argv, marker, what = _probe_argv(qemu, accel, log, kernel)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        deadline = time.monotonic() + timeout
        ok = False
        try:
            while time.monotonic() < deadline and proc.returncode is None:
                if log.exists() and marker in log.read_bytes():
                    ok = True
                    break
                await asyncio.sleep(0.2)
        finally:
            if proc.returncode is None:
                proc.kill()
            _, err = await proc.communicate()
        if ok:
            return True, f"{accel}: {what}"
        if proc.returncode not in (None, 0, -9) and time.monotonic() < deadline:
            detail = err.decode(errors="replace").strip().splitlines()
            return False, f"{accel}: QEMU exited: {detail[-1] if detail else proc.returncode}"
        return False, f"{accel}: guest showed no sign of life within {timeout:.0f} s"


def _cache_key() -> str:
    qemu = qemu_binary() or QEMU
    try:
        mtime = os.stat(qemu).st_mtime_ns
    except OSError:
        mtime = 0
    return f"{qemu}:{mtime}:{platform.release()}"


async def choose_accel(cache_file: Path | None = None, *, use_cache: bool = True) -> AccelChoice:
    """KVM when a probe guest really runs under it, else TCG (libvirt domain type `qemu`)."""
    forced = accel_override()
    if forced:
        return AccelChoice("kvm" if forced == "kvm" else "qemu", "TESTBED_ACCEL override")
    key = _cache_key()
    if use_cache and cache_file is not None:
        try:
            cached = json.loads(cache_file.read_text(encoding="utf-8"))
            if cached.get("key") == key:
                return AccelChoice(cached["accel"], cached["reason"] + " (cached)")
        except (OSError, ValueError, KeyError):
            pass
    if not os.path.exists("/dev/kvm"):
        choice = AccelChoice("qemu", "/dev/kvm is absent: TCG")
    else:
        images_dir = cache_file.parent / "images" if cache_file is not None else None
        ok, why = await probe("kvm", kernel=find_probe_kernel(images_dir))
        choice = AccelChoice("kvm", why) if ok else AccelChoice("qemu", f"KVM probe failed ({why}): TCG")
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(json.dumps({"key": key, "accel": choice.accel, "reason": choice.reason}))
    return choice

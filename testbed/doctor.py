"""`testbed doctor`: can this host run labs? One line per check, with the fix for failures.

Exit status 0 when every required check passes, 1 otherwise. Warnings (for example TCG
instead of KVM, or little free disk) do not fail the host.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from dataclasses import dataclass

from testbed.config import Settings
from testbed.hypervisor.accel import choose_accel
from testbed.hypervisor.connection import Hypervisor

MIN_FREE_GB = 5.0
WARN_FREE_GB = 20.0


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def _tool(name: str, binary: str, fix: str, version_args: tuple[str, ...] | None = ("--version",)) -> Check:
    path = shutil.which(binary)
    if path is None:
        return Check(name, "fail", f"{binary} not found", fix)
    detail = path
    if version_args is not None:
        try:
            out = subprocess.run([path, *version_args], capture_output=True, text=True, timeout=10, check=False)
            first = (out.stdout or out.stderr).strip().splitlines()
            detail = first[0] if first else path
        except (OSError, subprocess.TimeoutExpired):
            pass
    return Check(name, "ok", detail)


async def _libvirt(settings: Settings) -> Check:
    hv = Hypervisor(settings.libvirt_uri)
    try:
        await hv.open()
        lib, qemu = await hv.version()
    except Exception as exc:  # noqa: BLE001 - any failure is the check's answer
        return Check(
            "libvirt",
            "fail",
            str(exc),
            "start virtlogd and libvirtd (scripts/setup-host.sh does), or run under scripts/netns-run",
        )
    finally:
        await hv.close()
    return Check("libvirt", "ok", f"{settings.libvirt_uri}: libvirt {lib}, QEMU {qemu}")


async def _accel(settings: Settings) -> Check:
    choice = await choose_accel(settings.home / "accel.json", use_cache=False)
    if choice.accel == "kvm":
        return Check("accelerator", "ok", f"KVM ({choice.reason})")
    return Check(
        "accelerator",
        "warn",
        f"TCG ({choice.reason})",
        "guests run under emulation (about 1 min per boot); use a host where KVM works for speed",
    )


def _disk(settings: Settings) -> Check:
    path = settings.home
    probe = path
    while not probe.exists():
        probe = probe.parent
    free_gb = shutil.disk_usage(probe).free / 2**30
    detail = f"{free_gb:.1f} GiB free at {path}"
    if free_gb < MIN_FREE_GB:
        return Check(
            "image cache disk", "fail", detail, f"free space or set TESTBED_HOME (needs {MIN_FREE_GB:.0f} GiB)"
        )
    if free_gb < WARN_FREE_GB:
        return Check("image cache disk", "warn", detail, "labs of many nodes need more room for overlays")
    return Check("image cache disk", "ok", detail)


def _netns() -> Check:
    if shutil.which("unshare") is None:
        return Check("network namespace", "fail", "unshare not found", "apt-get install util-linux")
    try:
        out = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("network namespace", "fail", str(exc), "run as root")
    if out.returncode != 0:
        return Check(
            "network namespace",
            "fail",
            out.stderr.strip() or "unshare --net failed",
            "run as root (labs need CAP_NET_ADMIN)",
        )
    return Check("network namespace", "ok", "unshare --net works")


async def run_checks(settings: Settings) -> list[Check]:
    checks = [
        await _libvirt(settings),
        _tool("QEMU", "qemu-system-x86_64", "apt-get install qemu-system-x86"),
        _tool("qemu-img", "qemu-img", "apt-get install qemu-utils"),
        await _accel(settings),
        _tool("mmdebstrap (image builds)", "mmdebstrap", "apt-get install mmdebstrap", None),
        _tool("dnsmasq", "dnsmasq", "apt-get install dnsmasq-base (DHCP for cloud images)"),
        _tool("nftables (host guard)", "nft", "apt-get install nftables (keeps guests away from host services)"),
        _disk(settings),
        _netns(),
    ]
    return checks


def healthy(checks: list[Check]) -> bool:
    return all(c.status != "fail" for c in checks)


def run_doctor() -> list[Check]:
    return asyncio.run(run_checks(Settings.from_env()))

"""Local image builds: debootstrap + `mkfs.ext4 -d` + `qemu-img convert` (no loop mounts).

Contract: `build_image` returns the cached image when one with the same key exists (the key
hashes the recipe, the guest files copied in and `BUILD_VERSION`); otherwise it builds in a
staging directory and moves the result into place only when complete, so an interrupted
build leaves no image behind (the staging directory is removed on failure).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from testbed.errors import HarnessError, InputError
from testbed.images.store import ImageManifest, ImageStore, StoredImage
from testbed.model.images import DebootstrapSource, ImageDef

BUILD_VERSION = "1"
GUEST_FILES = ("configure.sh", "testbed-seed.sh", "testbed-seed.service")

ProgressFn = Callable[[str, str], None]
"""Called with (stage, detail) as the build goes; stages: debootstrap, configure, disk, convert."""


def _guest_file(name: str) -> bytes:
    return resources.files("testbed.images").joinpath("guestfiles", name).read_bytes()


def recipe_key(image: ImageDef) -> str:
    """Content key of a build: recipe + guest files + build version (16 hex chars)."""
    digest = hashlib.sha256()
    digest.update(BUILD_VERSION.encode())
    digest.update(json.dumps(image.model_dump(mode="json"), sort_keys=True).encode())
    for name in GUEST_FILES:
        digest.update(_guest_file(name))
    return digest.hexdigest()[:16]


async def _run(argv: list[str], stage: str, progress: ProgressFn | None, cwd: Path | None = None) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
    )
    assert proc.stdout is not None
    tail: list[str] = []
    async for raw in proc.stdout:
        line = raw.decode(errors="replace").rstrip()
        tail = [*tail[-19:], line]
        if progress and line:
            progress(stage, line)
    status = await proc.wait()
    if status != 0:
        output = "\n".join(tail)
        raise HarnessError(f"{stage}: {argv[0]} exited with status {status}:\n{output}")


def _require_tools() -> None:
    for tool in ("debootstrap", "mkfs.ext4", "qemu-img", "chroot"):
        if shutil.which(tool) is None:
            raise HarnessError(
                f"{tool} not found: run scripts/setup-host.sh (apt-get install debootstrap e2fsprogs qemu-utils)"
            )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


async def build_image(
    image: ImageDef,
    store: ImageStore,
    *,
    force: bool = False,
    progress: ProgressFn | None = None,
) -> StoredImage:
    """Build `image` (a debootstrap recipe) into `store`, or return the cached build."""
    source = image.source
    if not isinstance(source, DebootstrapSource):
        raise InputError(
            f"images/{image.name}.yaml",
            "source.type",
            f"'{source.type}' images are not built locally; use `testbed image pull` or `import`",
        )
    key = recipe_key(image)
    cached = store.get(image.name, key)
    if cached is not None and not force:
        store.commit_pointer(image.name, key)
        return cached
    _require_tools()
    staging = store.staging_dir(image.name, key)
    try:
        return await _build_into(image, source, key, staging, store, progress)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


async def _build_into(
    image: ImageDef,
    source: DebootstrapSource,
    key: str,
    staging: Path,
    store: ImageStore,
    progress: ProgressFn | None,
) -> StoredImage:
    rootfs = staging / "rootfs"
    packages = [*source.packages, source.kernel_package]
    await _run(
        [
            "debootstrap",
            f"--variant={source.variant}",
            f"--include={','.join(packages)}",
            source.suite,
            str(rootfs),
            source.mirror,
        ],
        "debootstrap",
        progress,
    )
    _install_guest_files(rootfs)
    await _run(["chroot", str(rootfs), "/bin/sh", "/root/testbed-configure.sh"], "configure", progress)
    (rootfs / "root" / "testbed-configure.sh").unlink()
    kernel, initrd = _extract_boot_files(rootfs, staging)
    raw = staging / "disk.raw"
    await _run(
        ["mkfs.ext4", "-q", "-F", "-L", "root", "-d", str(rootfs), str(raw), f"{source.disk_mb}M"],
        "disk",
        progress,
    )
    shutil.rmtree(rootfs)
    disk = staging / "disk.qcow2"
    await _run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(disk)], "convert", progress)
    raw.unlink()
    disk.chmod(0o444)
    manifest = ImageManifest(
        name=image.name,
        key=key,
        source=f"debootstrap {source.suite} {source.mirror}",
        disk_sha256=_sha256(disk),
        disk_size=disk.stat().st_size,
        kernel=kernel,
        initrd=initrd,
    )
    return store.commit(staging, manifest)


def _install_guest_files(rootfs: Path) -> None:
    sbin = rootfs / "usr" / "local" / "sbin" / "testbed-seed"
    sbin.write_bytes(_guest_file("testbed-seed.sh"))
    sbin.chmod(0o755)
    unit = rootfs / "etc" / "systemd" / "system" / "testbed-seed.service"
    unit.write_bytes(_guest_file("testbed-seed.service"))
    script = rootfs / "root" / "testbed-configure.sh"
    script.write_bytes(_guest_file("configure.sh"))


def _extract_boot_files(rootfs: Path, staging: Path) -> tuple[str, str]:
    boot = rootfs / "boot"
    kernels = sorted(boot.glob("vmlinuz-*"))
    initrds = sorted(boot.glob("initrd.img-*"))
    if not kernels or not initrds:
        raise HarnessError(f"no kernel/initrd under {boot}: is the kernel package in the recipe?")
    shutil.copy2(kernels[-1], staging / "vmlinuz")
    shutil.copy2(initrds[-1], staging / "initrd.img")
    return "vmlinuz", "initrd.img"

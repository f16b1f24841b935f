"""Local image builds of `debootstrap` recipes, without loop mounts.

Steps: bootstrap (mmdebstrap, `testbed.images.bootstrap`) → guest files → configure
(`guestfiles/configure.sh` in a chroot) → the recipe's own customize scripts (in the same
chroot, `sh -eu`) → disk → convert (`qemu-img convert` to qcow2).
`boot.mode: kernel` images are one ext4 file system (`mkfs.ext4 -d`) with the kernel and
initrd cached beside the disk; `boot.mode: disk` images are a partitioned disk with GRUB for
BIOS and UEFI (`testbed.images.disk`).

Contract: `build_image` returns the cached image when one with the same key exists (the key
hashes what the disk is made from — `recipe_inputs`, the guest files and `BUILD_VERSION` —
and not the image's name or firmware, so two catalog entries that differ only in how they
boot share one build: the second is a link to the first's directory). Otherwise it builds in
a staging directory and moves the result into place only when complete, so an interrupted
build leaves no image behind (the staging directory is removed on failure). Builds of one
key take turns through a lock file (`images/.locks/<key>.lock`): a second build of an image
being built waits and then returns the first one's result.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from testbed.aio import file_lock
from testbed.errors import HarnessError, InputError
from testbed.images import disk as bootdisk
from testbed.images.bootstrap import TOOLS as BOOTSTRAP_TOOLS
from testbed.images.bootstrap import bootstrap
from testbed.images.commands import ProgressFn, missing_tools, run_logged
from testbed.images.store import ImageManifest, ImageStore, StoredImage
from testbed.model.images import DebootstrapSource, ImageDef

BUILD_VERSION = "2"
GUEST_FILES = (
    "configure.sh",
    "testbed-seed.sh",
    "testbed-seed.service",
    "testbed-seed.openrc",
    "testbed-seed-ifupdown.sh",
)
BASE_TOOLS = (*BOOTSTRAP_TOOLS, "mkfs.ext4", "qemu-img")
__all__ = ["BUILD_VERSION", "ProgressFn", "build_image", "build_tools", "missing_build_tools", "recipe_key"]


def _guest_file(name: str) -> bytes:
    return resources.files("testbed.images").joinpath("guestfiles", name).read_bytes()


def recipe_inputs(image: ImageDef) -> dict[str, Any]:
    """What a build's disk is made from (the image's name and firmware are not part of it)."""
    source = image.source.model_dump(mode="json")
    scripts = source.pop("customize", []) + source.pop("extra_customize", [])
    if scripts:  # absent when empty, so recipes without scripts keep their keys
        source["scripts"] = scripts
    inputs: dict[str, Any] = {
        "os": image.os.model_dump(mode="json"),
        "source": source,
        "init": image.init,
        "provision": image.login.provision,
        "boot_mode": image.boot.mode,
    }
    if image.boot.mode == "disk":
        inputs["cmdline"] = image.boot.cmdline  # written into the disk's grub.cfg
    return inputs


def recipe_key(image: ImageDef) -> str:
    """Content key of a build: recipe inputs + guest files + build version (16 hex chars)."""
    digest = hashlib.sha256()
    digest.update(BUILD_VERSION.encode())
    digest.update(json.dumps(recipe_inputs(image), sort_keys=True).encode())
    for name in GUEST_FILES:
        digest.update(_guest_file(name))
    return digest.hexdigest()[:16]


def build_tools(image: ImageDef) -> tuple[str, ...]:
    """The host tools a build of `image` runs."""
    return (*BASE_TOOLS, *bootdisk.TOOLS) if image.boot.mode == "disk" else BASE_TOOLS


def missing_build_tools(image: ImageDef) -> list[str]:
    return missing_tools(build_tools(image))


def _require_tools(image: ImageDef) -> None:
    missing = missing_build_tools(image)
    if missing:
        raise HarnessError(
            f"{', '.join(missing)} not found: run scripts/setup-host.sh "
            "(apt-get install mmdebstrap e2fsprogs qemu-utils fdisk dosfstools mtools)"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _source(image: ImageDef) -> DebootstrapSource:
    if not isinstance(image.source, DebootstrapSource):
        raise InputError(
            f"images/{image.name}.yaml",
            "source.type",
            f"'{image.source.type}' images are not built locally; use `testbed image pull` or `import`",
        )
    return image.source


async def build_image(
    image: ImageDef,
    store: ImageStore,
    *,
    force: bool = False,
    progress: ProgressFn | None = None,
) -> StoredImage:
    """Build `image` (a debootstrap recipe) into `store`, or return the cached build."""
    source = _source(image)
    key = recipe_key(image)
    if not force and (cached := _cached(image, store, key)) is not None:
        return cached
    _require_tools(image)
    # builds of one key take turns (two sessions building one recipe would share a staging
    # directory); whoever waited finds the other's result in the cache
    async with file_lock(store.writer_lock(key)):
        if not force and (cached := _cached(image, store, key)) is not None:
            return cached
        with store.staged(image.name, key) as staging:
            return await _build_into(image, source, key, staging, store, progress)


def _cached(image: ImageDef, store: ImageStore, key: str) -> StoredImage | None:
    """The cached build of `key` made current for `image` (its own, or another name's build
    of the same recipe linked to it), or None."""
    cached = store.get(image.name, key)
    if cached is not None:
        store.commit_pointer(image.name, key)
        return cached
    shared = store.find_key(key)
    return None if shared is None else store.link(image.name, shared)


async def _build_into(
    image: ImageDef,
    source: DebootstrapSource,
    key: str,
    staging: Path,
    store: ImageStore,
    progress: ProgressFn | None,
) -> StoredImage:
    rootfs = staging / "rootfs"
    await bootstrap(source, rootfs, store.apt_cache_dir(source.suite), progress)
    ids = bootdisk.BootIds.for_key(key) if image.boot.mode == "disk" else None
    _install_guest_files(rootfs, image)
    env = {
        "PATH": "/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin",
        "TESTBED_INIT": image.init,
        "TESTBED_PROVISION": image.login.provision,
        "TESTBED_ROOT": ids.root_fstab if ids else "/dev/vda",
        "TESTBED_ESP": ids.esp_fstab if ids else "",
    }
    await run_logged(["chroot", str(rootfs), "/bin/sh", "/root/testbed-configure.sh"], "configure", progress, env=env)
    (rootfs / "root" / "testbed-configure.sh").unlink()
    await _customize(rootfs, source.scripts, env, progress)
    raw = staging / "disk.raw"
    kernel: str | None = None
    initrd: str | None = None
    if ids is None:
        kernel, initrd = _extract_boot_files(rootfs, staging)
        await run_logged(
            ["mkfs.ext4", "-q", "-F", "-L", "root", "-d", str(rootfs), str(raw), f"{source.disk_mb}M"], "disk", progress
        )
    else:
        grub = await bootdisk.prepare_boot_files(rootfs, staging, ids, image.boot.cmdline, progress)
        layout = bootdisk.DiskLayout.for_size(source.disk_mb)
        await bootdisk.assemble_disk(raw, layout, rootfs, ids, grub, progress)
        for path in (grub.boot_img, grub.core_img, grub.efi_image):
            path.unlink()
    shutil.rmtree(rootfs)
    qcow2 = staging / "disk.qcow2"
    await run_logged(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(qcow2)], "convert", progress)
    raw.unlink()
    qcow2.chmod(0o444)
    manifest = ImageManifest(
        name=image.name,
        key=key,
        source=f"mmdebstrap {source.suite} {source.mirror}",
        disk_sha256=_sha256(qcow2),
        disk_size=qcow2.stat().st_size,
        kernel=kernel,
        initrd=initrd,
    )
    return store.commit(staging, manifest)


async def _customize(rootfs: Path, scripts: list[str], env: dict[str, str], progress: ProgressFn | None) -> None:
    """Run the recipe's customize scripts in the tree's chroot, one after another."""
    script = rootfs / "root" / "testbed-customize.sh"
    for index, text in enumerate(scripts, start=1):
        _write(script, text.encode())
        try:
            await run_logged(
                ["chroot", str(rootfs), "/bin/sh", "-eu", "/root/testbed-customize.sh"],
                f"customize {index}/{len(scripts)}",
                progress,
                env=env,
            )
        finally:
            script.unlink(missing_ok=True)


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def _install_guest_files(rootfs: Path, image: ImageDef) -> None:
    if image.login.provision == "seed":
        sbin = rootfs / "usr" / "local" / "sbin"
        _write(sbin / "testbed-seed", _guest_file("testbed-seed.sh"), 0o755)
        if image.init == "openrc":
            _write(rootfs / "etc" / "init.d" / "testbed-seed", _guest_file("testbed-seed.openrc"), 0o755)
            _write(sbin / "testbed-seed-ifupdown", _guest_file("testbed-seed-ifupdown.sh"), 0o755)
        else:
            unit = rootfs / "etc" / "systemd" / "system" / "testbed-seed.service"
            _write(unit, _guest_file("testbed-seed.service"))
    _write(rootfs / "root" / "testbed-configure.sh", _guest_file("configure.sh"))


def _extract_boot_files(rootfs: Path, staging: Path) -> tuple[str, str]:
    boot = rootfs / "boot"
    kernels = sorted(boot.glob("vmlinuz-*"))
    initrds = sorted(boot.glob("initrd.img-*"))
    if not kernels or not initrds:
        raise HarnessError(f"no kernel/initrd under {boot}: is the kernel package in the recipe?")
    shutil.copy2(kernels[-1], staging / "vmlinuz")
    shutil.copy2(initrds[-1], staging / "initrd.img")
    return "vmlinuz", "initrd.img"

"""`testbed image import NAME PATH`: register a local disk file as catalog image NAME.

Contract of `import_image`:
- NAME must be a catalog image (`InputError` listing the known names otherwise);
- PATH must be a readable regular file that is a disk image: qcow2 (without a backing file),
  or another format qemu-img detects (vmdk, vpc, vdi, vhdx), or raw with a partition table
  (MBR/GPT) or an ext2/3/4 file system at its start; anything else is an `InputError` naming
  PATH;
- the cache key is the sha256 of PATH's content; an image already cached under that key is
  made current without copying;
- the user's file is only read: qcow2 is copied, other formats are converted to qcow2, into
  the store's staging directory, which is moved into place only when complete.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from testbed.errors import HarnessError, InputError
from testbed.images.pull import check_disk, convert_to_qcow2, file_sha256, qemu_img_info
from testbed.images.store import ImageManifest, ImageStore, StoredImage
from testbed.model.images import ImageDef

CONVERTIBLE = ("raw", "vmdk", "vpc", "vdi", "vhdx")


def _looks_like_raw_disk(path: Path) -> bool:
    """True when a file qemu-img calls `raw` starts like a disk or a file system image."""
    try:
        with path.open("rb") as fh:
            head = fh.read(2048)
    except OSError:
        return False
    if len(head) >= 512 and head[510:512] == b"\x55\xaa":
        return True  # MBR (or protective MBR of a GPT disk)
    if head[512:520] == b"EFI PART":
        return True  # GPT header without a protective MBR
    return len(head) >= 1082 and head[1080:1082] == b"\x53\xef"  # ext2/3/4 superblock magic


def _disk_format(path: Path) -> str:
    try:
        info = qemu_img_info(path)
    except HarnessError as exc:
        raise InputError(path, None, f"not a disk image: {exc}") from exc
    fmt = str(info.get("format"))
    if fmt == "qcow2" or (fmt in CONVERTIBLE and fmt != "raw"):
        return fmt
    if fmt == "raw" and _looks_like_raw_disk(path):
        return fmt
    raise InputError(
        path,
        None,
        "not a disk image (expected qcow2, or a raw disk with a partition table or file system)",
    )


def import_image(
    image_name: str,
    path: Path,
    store: ImageStore,
    catalog: dict[str, ImageDef],
) -> StoredImage:
    """Copy (or convert) the disk at `path` into the cache as `image_name`; make it current."""
    image = catalog.get(image_name)
    if image is None:
        known = ", ".join(sorted(catalog)) or "(none)"
        raise InputError(None, "NAME", f"unknown image '{image_name}'; known images: {known}")
    path = Path(path).expanduser()
    if not path.exists():
        raise InputError(path, None, "no such file")
    if not path.is_file():
        raise InputError(path, None, "not a regular file")
    fmt = _disk_format(path)
    if fmt == "qcow2":
        try:
            check_disk(path, "qcow2")
        except HarnessError as exc:
            raise InputError(path, None, str(exc)) from exc
    try:
        key = file_sha256(path)
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror}") from exc
    cached = store.get(image.name, key)
    if cached is not None:
        store.commit_pointer(image.name, key)
        return cached
    staging = store.staging_dir(image.name, key)
    try:
        disk = staging / "disk.qcow2"
        if fmt == "qcow2":
            shutil.copyfile(path, disk)
        else:
            convert_to_qcow2(path, fmt, disk)
        disk.chmod(0o444)
        disk_sha256 = file_sha256(disk)
        if fmt == "qcow2" and disk_sha256 != key:
            raise InputError(path, None, "the file changed while it was being imported")
        manifest = ImageManifest(
            name=image.name,
            key=key,
            source=f"import {path.resolve()} ({fmt})",
            disk_sha256=disk_sha256,
            disk_size=disk.stat().st_size,
        )
        return store.commit(staging, manifest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

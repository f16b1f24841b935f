"""The image cache under `$TESTBED_HOME/images`.

Layout (one directory per image, one sub-directory per content key):

    images/<name>/<key>/disk.qcow2      the base disk (never written after it is made)
    images/<name>/<key>/vmlinuz         kernel, for images that boot a kernel directly
    images/<name>/<key>/initrd.img
    images/<name>/<key>/manifest.json   ImageManifest
    images/<name>/current               text file holding the key in use
    images/<name>/<key> -> ../<other>/<key>   a build shared with another name (same recipe)
    build-cache/apt/<suite>/            .debs kept between builds (beside images/)

A key is the recipe hash for built images, the checksum (sha256 or sha512) for downloads and
the sha256 for imports. Writers fill `<key>.partial/` and rename it into place, so a reader
never sees a half-made image. A shared build is a relative symlink, made atomically; removing
the image it points to makes the link's image absent (`get` returns None), never broken.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from testbed.errors import InputError
from testbed.model.images import ImageDef
from testbed.model.topology import Topology


@dataclass(frozen=True)
class ImageManifest:
    name: str
    key: str
    source: str
    disk_sha256: str
    disk_size: int
    kernel: str | None = None
    initrd: str | None = None
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())


@dataclass(frozen=True)
class StoredImage:
    """A complete image in the cache."""

    manifest: ImageManifest
    directory: Path

    @property
    def disk(self) -> Path:
        return self.directory / "disk.qcow2"

    @property
    def kernel(self) -> Path | None:
        return self.directory / self.manifest.kernel if self.manifest.kernel else None

    @property
    def initrd(self) -> Path | None:
        return self.directory / self.manifest.initrd if self.manifest.initrd else None


class ImageStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def image_dir(self, name: str) -> Path:
        return self.root / name

    def get(self, name: str, key: str | None = None) -> StoredImage | None:
        """The image with `key`, or the current one; None when absent or incomplete."""
        if key is None:
            pointer = self.image_dir(name) / "current"
            try:
                key = pointer.read_text(encoding="ascii").strip()
            except (OSError, ValueError):
                return None
        directory = self.image_dir(name) / key
        try:
            data = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
            image = StoredImage(ImageManifest(**data), directory)
        except (OSError, ValueError, TypeError):
            return None
        return image if image.disk.exists() else None

    def require(self, image: ImageDef, field: str, file: str | Path | None = None) -> StoredImage:
        """The cached disk of catalog image `image`; an `InputError` naming `field` and the
        command that fetches it when it is not in the cache."""
        stored = self.get(image.name)
        if stored is None:
            how = {"debootstrap": "testbed image build", "user": "testbed image import"}.get(
                image.source.type, "testbed image pull"
            )
            arg = " PATH" if image.source.type == "user" else ""
            raise InputError(
                file, field, f"image '{image.name}' is not in the image cache; run `{how} {image.name}{arg}` first"
            )
        return stored

    def require_nodes(self, topology: Topology, catalog: dict[str, ImageDef], file: str | Path | None = None) -> None:
        """`require` for the image of every node of `topology` (a name not in `catalog` is an
        `InputError` too); `file` is the definition the errors name."""
        for node in topology.nodes:
            name = node.image or ""
            if name not in catalog:
                raise InputError(file, f"nodes[{node.name}].image", f"unknown image '{name}'")
            self.require(catalog[name], f"nodes[{node.name}].image", file)

    def staging_dir(self, name: str, key: str) -> Path:
        """A fresh `<key>.partial` directory for a writer (any leftover is removed)."""
        staging = self.image_dir(name) / f"{key}.partial"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        return staging

    @contextlib.contextmanager
    def staged(self, name: str, key: str) -> Iterator[Path]:
        """`staging_dir` for the block, removed when the block raises (a writer that fails
        or is interrupted leaves nothing behind)."""
        staging = self.staging_dir(name, key)
        try:
            yield staging
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def writer_lock(self, key: str) -> Path:
        """The lock file writers of `key` take turns on (`testbed.aio.file_lock`)."""
        return self.root / ".locks" / f"{key}.lock"

    def commit(self, staging: Path, manifest: ImageManifest) -> StoredImage:
        """Write the manifest, move `staging` into place and make it current."""
        (staging / "manifest.json").write_text(json.dumps(asdict(manifest), indent=2), encoding="utf-8")
        final = self.image_dir(manifest.name) / manifest.key
        if final.is_symlink():
            final.unlink()  # a shared build this name now builds for itself
        elif final.exists():
            shutil.rmtree(final)
        os.replace(staging, final)
        self.commit_pointer(manifest.name, manifest.key)
        return StoredImage(manifest, final)

    def commit_pointer(self, name: str, key: str) -> None:
        """Make `key` the current image of `name` (atomic rename)."""
        pointer = self.image_dir(name) / "current"
        try:
            if pointer.read_text(encoding="ascii").strip() == key:
                return
        except OSError:
            pass
        # a temporary name of our own: several processes may commit at once
        tmp = pointer.with_name(f".current.{os.getpid()}.{secrets.token_hex(4)}")
        tmp.write_text(key, encoding="ascii")
        os.replace(tmp, pointer)

    def find_key(self, key: str) -> StoredImage | None:
        """A complete image under any name whose directory is `key` (not a link itself)."""
        if not self.root.exists():
            return None
        for directory in sorted(self.root.glob(f"*/{key}")):
            if directory.is_symlink():
                continue
            found = self.get(directory.parent.name, key)
            if found is not None:
                return found
        return None

    def link(self, name: str, shared: StoredImage) -> StoredImage:
        """Make `shared` (another name's image) also the current image of `name`."""
        key = shared.manifest.key
        link = self.image_dir(name) / key
        link.parent.mkdir(parents=True, exist_ok=True)
        tmp = link.with_name(f".{key}.{os.getpid()}.{secrets.token_hex(4)}")
        tmp.symlink_to(Path("..") / shared.directory.parent.name / key)
        os.replace(tmp, link)
        self.commit_pointer(name, key)
        return StoredImage(shared.manifest, link)

    def apt_cache_dir(self, suite: str) -> Path:
        """Where builds of `suite` keep downloaded packages."""
        return self.root.parent / "build-cache" / "apt" / suite

    def list(self) -> list[StoredImage]:
        """Every current image in the cache."""
        if not self.root.exists():
            return []
        found = []
        for directory in sorted(p for p in self.root.iterdir() if p.is_dir()):
            image = self.get(directory.name)
            if image is not None:
                found.append(image)
        return found

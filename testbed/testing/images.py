"""Images in a real image cache without building one: `cache_image(images_dir, name)`.

Contract: the entry is written through `testbed.images.store.ImageStore` exactly as a pull
or an import commits one (a staging directory, a manifest with the disk's sha256, the
`current` pointer), so `ImageStore.get` and `require` find it; the disk holds a few bytes,
not a bootable image — enough for code that checks an image is cached, not to boot it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from testbed.images.store import ImageManifest, ImageStore, StoredImage


def cache_image(images_dir: Path, name: str, content: bytes = b"not a bootable disk") -> StoredImage:
    """Commit a placeholder disk as the current image `name` in the cache at `images_dir`."""
    store = ImageStore(images_dir)
    key = hashlib.sha256(name.encode() + content).hexdigest()[:16]
    staging = store.staging_dir(name, key)
    (staging / "disk.qcow2").write_bytes(content)
    manifest = ImageManifest(name, key, "test placeholder", hashlib.sha256(content).hexdigest(), len(content))
    return store.commit(staging, manifest)

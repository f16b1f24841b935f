"""How a catalog image gets into this host's cache, and whether it is there.

Contract of `availability(image, store)`: `method` is `build` (a debootstrap recipe, built
here), `pull` (a URL with a checksum) or `import` (a file the user supplies); `here` says
whether this host can do it now (`yes`, or `no: missing TOOL, ...` for builds whose tools
are absent; `online` for pulls, which need the image's host reachable; `needs a file` for
imports); `state` is `present` (the cached image is the one the definition names: same
recipe key or checksum), `stale` (an image is cached but the definition has changed since:
rebuild or pull again), `imported` (user images: any import counts), or `absent`. A build
shared with another name (same recipe) is `present` with `shared_with` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.images.build import missing_build_tools, recipe_key
from testbed.images.store import ImageStore, StoredImage
from testbed.model.images import DebootstrapSource, ImageDef, UrlSource


@dataclass(frozen=True)
class Availability:
    method: str
    here: str
    state: str
    stored: StoredImage | None
    shared_with: str | None = None

    @property
    def command(self) -> str:
        """What to run to get the image (for messages)."""
        return {"build": "testbed image build", "pull": "testbed image pull", "import": "testbed image import"}[
            self.method
        ]


def _expected_key(image: ImageDef) -> str | None:
    if isinstance(image.source, DebootstrapSource):
        return recipe_key(image)
    if isinstance(image.source, UrlSource):
        return image.source.checksum[1]
    return None


def availability(image: ImageDef, store: ImageStore) -> Availability:
    if isinstance(image.source, DebootstrapSource):
        missing = missing_build_tools(image)
        method, here = "build", ("no: missing " + ", ".join(missing)) if missing else "yes"
    elif isinstance(image.source, UrlSource):
        method, here = "pull", "online"
    else:
        method, here = "import", "needs a file"
    stored = store.get(image.name)
    if stored is None:
        return Availability(method, here, "absent", None)
    expected = _expected_key(image)
    if expected is None:
        return Availability(method, here, "imported", stored)
    if stored.manifest.key != expected:
        return Availability(method, here, "stale", stored)
    shared = stored.manifest.name if stored.manifest.name != image.name else None
    return Availability(method, here, "present", stored, shared)

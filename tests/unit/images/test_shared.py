"""One build for two names: the store's links, `build_image` reusing another name's build
of the same recipe, and what `availability` reports (present, stale, shared, absent)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from testbed.config import project_root
from testbed.images.availability import availability
from testbed.images.build import build_image, recipe_key
from testbed.images.store import ImageManifest, ImageStore, StoredImage
from testbed.model.images import ImageDef, load_catalog

CATALOG = load_catalog(project_root() / "images")


def fake_build(store: ImageStore, image: ImageDef, key: str | None = None) -> StoredImage:
    """A complete cache entry for `image` as a build would leave it (no real build)."""
    key = key or recipe_key(image)
    staging = store.staging_dir(image.name, key)
    (staging / "disk.qcow2").write_bytes(b"disk")
    return store.commit(staging, ImageManifest(image.name, key, "debootstrap trixie", "0" * 64, 4))


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    return ImageStore(tmp_path / "images")


def test_a_second_name_links_to_the_first_build(store: ImageStore) -> None:
    bios, uefi = CATALOG["debian-13-cloud"], CATALOG["debian-13-cloud-uefi"]
    built = fake_build(store, bios)
    # build_image finds the same recipe under the other name before needing any tool
    linked = asyncio.run(build_image(uefi, store))
    assert linked.manifest == built.manifest
    link = store.image_dir(uefi.name) / built.manifest.key
    assert link.is_symlink() and link.resolve() == built.directory.resolve()
    assert store.get(uefi.name) is not None and store.get(uefi.name).disk.read_bytes() == b"disk"
    assert {s.directory.parent.name for s in store.list()} == {bios.name, uefi.name}
    state = availability(uefi, store)
    assert (state.method, state.state, state.shared_with) == ("build", "present", "debian-13-cloud")
    assert availability(bios, store).shared_with is None


def test_removing_the_build_makes_the_link_absent_not_broken(store: ImageStore) -> None:
    bios, uefi = CATALOG["debian-13-cloud"], CATALOG["debian-13-cloud-uefi"]
    fake_build(store, bios)
    asyncio.run(build_image(uefi, store))
    shutil.rmtree(store.image_dir(bios.name))
    assert store.get(uefi.name) is None
    assert store.find_key(recipe_key(uefi)) is None, "a link is never taken for a build"
    assert availability(uefi, store).state == "absent"


def test_a_forced_build_replaces_the_link(store: ImageStore) -> None:
    bios, uefi = CATALOG["debian-13-cloud"], CATALOG["debian-13-cloud-uefi"]
    fake_build(store, bios)
    asyncio.run(build_image(uefi, store))
    own = fake_build(store, uefi)  # what a --force build of the second name commits
    assert not own.directory.is_symlink() and store.get(uefi.name) == own
    assert store.get(bios.name) is not None


def test_stale_when_the_recipe_changed(store: ImageStore) -> None:
    image = CATALOG["debian-12"]
    fake_build(store, image, key="0" * 16)
    state = availability(image, store)
    assert state.state == "stale" and state.stored is not None
    fake_build(store, image)
    assert availability(image, store).state == "present"


def test_availability_of_pulls_and_imports(store: ImageStore) -> None:
    assert availability(CATALOG["ubuntu-24.04"], store).method == "pull"
    assert availability(CATALOG["alpine-3.20"], store).here == "online"
    vyos = availability(CATALOG["vyos"], store)
    assert (vyos.method, vyos.state, vyos.command) == ("import", "absent", "testbed image import")


def test_missing_build_tools_are_named(store: ImageStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("testbed.images.commands.shutil.which", lambda tool, path=None: None)
    here = availability(CATALOG["debian-13-cloud"], store).here
    assert here.startswith("no: missing ") and "mmdebstrap" in here and "sfdisk" in here
    assert "sfdisk" not in availability(CATALOG["debian-12"], store).here, "kernel images need no partitioning"


def test_concurrent_builds_of_one_recipe_take_turns_and_the_second_reuses_the_first(
    store: ImageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions building one image at once (or its two boot variants) must not share a
    staging directory: one builds, the other waits for the lock and finds the result."""
    import testbed.images.build as build_mod

    bios, uefi = CATALOG["debian-13-cloud"], CATALOG["debian-13-cloud-uefi"]
    running, builds = [], []

    async def fake_build_into(image, source, key, staging, store_, progress):  # type: ignore[no-untyped-def]
        running.append(image.name)
        assert len(running) == 1, "two builds of one key ran at once"
        builds.append(image.name)
        (staging / "disk.qcow2").write_bytes(b"disk")
        await asyncio.sleep(0.2)
        running.remove(image.name)
        return store_.commit(staging, ImageManifest(image.name, key, "debootstrap trixie", "0" * 64, 4))

    monkeypatch.setattr(build_mod, "_build_into", fake_build_into)
    monkeypatch.setattr(build_mod, "_require_tools", lambda image: None)

    async def both() -> list[StoredImage]:
        return list(await asyncio.gather(build_image(bios, store), build_image(uefi, store), build_image(bios, store)))

    first, second, third = asyncio.run(both())
    # whichever thread wins the flock builds (the order is the kernel's); the other name links
    assert len(builds) == 1 and builds[0] in (bios.name, uefi.name)
    assert first.manifest == second.manifest == third.manifest
    linked = uefi if builds[0] == bios.name else bios
    assert (store.image_dir(linked.name) / first.manifest.key).is_symlink()
    assert not (store.image_dir(builds[0]) / first.manifest.key).is_symlink()

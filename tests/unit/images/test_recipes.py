"""The Debian recipe family: one baseline (images/bases/debian.yaml), `extends` chains,
package additions and exclusions, and recipe keys that ignore the name and firmware."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testbed.config import project_root
from testbed.errors import InputError
from testbed.images.bootstrap import bootstrap_argv, installed_packages
from testbed.images.build import recipe_inputs, recipe_key
from testbed.model.images import DebootstrapSource, ImageDef, load_catalog, load_image, merge_definitions

IMAGES = project_root() / "images"
BASELINE = yaml.safe_load((IMAGES / "bases" / "debian.yaml").read_text())["source"]["packages"]


def _source(image: ImageDef) -> DebootstrapSource:
    assert isinstance(image.source, DebootstrapSource)
    return image.source


@pytest.fixture(scope="module")
def catalog() -> dict[str, ImageDef]:
    return load_catalog(IMAGES)


RELEASES = [("debian-11", "bullseye"), ("debian-12", "bookworm"), ("debian-13", "trixie")]


@pytest.mark.parametrize(("name", "suite"), RELEASES)
def test_each_release_takes_the_one_baseline(catalog: dict[str, ImageDef], name: str, suite: str) -> None:
    image = catalog[name]
    source = _source(image)
    assert source.suite == suite and image.os.release == name.split("-")[1]
    assert source.install == [*BASELINE, "linux-image-cloud-amd64"]
    assert "qemu-guest-agent" in source.install and "openssh-server" in source.install
    assert image.init == "systemd" and image.boot.mode == "kernel" and image.login.provision == "seed"
    assert image.extends == "debian"


def test_the_baseline_is_written_once() -> None:
    listed = [p for p in IMAGES.glob("*.yaml") if "openssh-server" in p.read_text()]
    assert listed == [], f"package lists repeated outside images/bases: {listed}"


def test_openrc_variant_swaps_the_init_system(catalog: dict[str, ImageDef]) -> None:
    image = catalog["debian-12-openrc"]
    install = _source(image).install
    assert image.init == "openrc" and image.extends == "debian-12"
    openrc = {"sysvinit-core", "openrc", "initscripts", "ifupdown"}
    assert set(install) == (set(BASELINE) - {"systemd", "systemd-sysv"}) | openrc | {"linux-image-cloud-amd64"}
    assert "systemd.show_status" not in image.boot.cmdline


def test_cloud_image_boots_its_own_disk_with_cloud_init(catalog: dict[str, ImageDef]) -> None:
    bios, uefi = catalog["debian-13-cloud"], catalog["debian-13-cloud-uefi"]
    assert bios.boot.mode == uefi.boot.mode == "disk"
    assert (bios.boot.firmware, uefi.boot.firmware) == ("bios", "uefi")
    assert bios.login.provision == "cloud-init" and _source(bios).suite == "trixie"
    assert {"cloud-init", "grub-pc-bin", "grub-efi-amd64-bin"} <= set(_source(bios).install)
    # only the firmware differs, so both names are one build
    assert recipe_key(bios) == recipe_key(uefi)
    assert recipe_key(bios) != recipe_key(catalog["debian-13"])


def test_recipe_key_follows_what_the_disk_is_made_from(catalog: dict[str, ImageDef]) -> None:
    base = catalog["debian-12"]
    renamed = base.model_copy(update={"name": "other", "description": "x"})
    assert recipe_key(renamed) == recipe_key(base)
    for change in ({"init": "openrc"}, {"login": base.login.model_copy(update={"provision": "cloud-init"})}):
        assert recipe_key(base.model_copy(update=change)) != recipe_key(base)
    # a kernel image's command line is the domain's, not the disk's; a disk image's is in grub.cfg
    other_cmdline = base.boot.model_copy(update={"cmdline": "root=/dev/vda quiet"})
    assert recipe_key(base.model_copy(update={"boot": other_cmdline})) == recipe_key(base)
    cloud = catalog["debian-13-cloud"]
    assert "cmdline" in recipe_inputs(cloud) and "cmdline" not in recipe_inputs(base)


def test_merge_replaces_lists_and_merges_mappings() -> None:
    base = {"source": {"suite": "a", "packages": ["x", "y"], "mirror": "m"}, "init": "systemd"}
    merged = merge_definitions(base, {"source": {"suite": "b", "packages": ["z"]}})
    assert merged == {"source": {"suite": "b", "packages": ["z"], "mirror": "m"}, "init": "systemd"}
    assert base["source"]["suite"] == "a", "the base is not modified"


def _write(directory: Path, name: str, data: dict[str, object]) -> Path:
    path = directory / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def test_extends_chain_and_its_errors(tmp_path: Path) -> None:
    _write(tmp_path / "bases", "fam", yaml.safe_load((IMAGES / "bases" / "debian.yaml").read_text()))
    _write(tmp_path, "one", {"name": "one", "extends": "fam", "os": {"release": "1"}, "source": {"suite": "s1"}})
    two = _write(tmp_path, "two", {"name": "two", "extends": "one", "source": {"extra_packages": ["vim-tiny"]}})
    image = load_image(two)
    assert (
        image.name == "two"
        and _source(image).suite == "s1"
        and _source(image).install[-2:]
        == [
            "vim-tiny",
            "linux-image-cloud-amd64",
        ]
    )
    assert set(load_catalog(tmp_path)) == {"one", "two"}, "bases are not images"

    missing = _write(tmp_path, "three", {"name": "three", "extends": "nowhere"})
    with pytest.raises(InputError) as info:
        load_image(missing)
    assert info.value.field == "extends" and "nowhere" in info.value.problem

    _write(tmp_path, "a", {"name": "a", "extends": "b"})
    loop = _write(tmp_path, "b", {"name": "b", "extends": "a"})
    with pytest.raises(InputError) as info:
        load_image(loop)
    assert info.value.field == "extends" and "cycle" in info.value.problem


def test_bootstrap_command_installs_the_resolved_list(catalog: dict[str, ImageDef], tmp_path: Path) -> None:
    source = _source(catalog["debian-12-openrc"])
    argv = bootstrap_argv(source, tmp_path / "rootfs", tmp_path / "cache")
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"], "mounts must die with mmdebstrap"
    include = next(a for a in argv if a.startswith("--include="))
    assert include.removeprefix("--include=").split(",") == source.install
    assert f"--setup-hook=sync-in {tmp_path / 'cache'} /var/cache/apt/archives/" in argv
    assert argv[-3:] == ["bookworm", str(tmp_path / "rootfs"), "http://deb.debian.org/debian"]


def test_installed_packages_reads_dpkg_status(tmp_path: Path) -> None:
    status = tmp_path / "var" / "lib" / "dpkg" / "status"
    status.parent.mkdir(parents=True)
    status.write_text(
        "Package: openrc\nStatus: install ok installed\nDescription: x\n continued: line\n\n"
        "Package: systemd\nStatus: deinstall ok config-files\n\n"
        "Package: udev\nStatus: install ok installed\n"
    )
    assert installed_packages(tmp_path) == {"openrc", "udev"}

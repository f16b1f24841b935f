"""The image catalog in images/: every definition loads, and schema errors name the field."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from testbed.config import project_root
from testbed.errors import InputError
from testbed.images.build import recipe_key
from testbed.model.images import DebootstrapSource, UrlSource, load_catalog, load_image

IMAGES = project_root() / "images"
EXPECTED = {
    "debian-11",
    "debian-12",
    "debian-13",
    "debian-12-openrc",
    "debian-12-disk",
    "debian-13-cloud",
    "debian-13-cloud-uefi",
    "ubuntu-24.04",
    "ubuntu-16.04",
    "almalinux-9",
    "centos-stream-10",
    "alpine-3.20",
    "debian-12-cloud",
    "openwrt-23.05",
    "opnsense-23.1",
    "vyos",
    "sonic-vs",
    "frr-router",
    "frr-router-console",
    "frr-router-13",
}


@pytest.mark.parametrize("path", sorted(IMAGES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_catalog_yaml_loads(path: Path) -> None:
    image = load_image(path)
    assert image.name == path.stem
    if isinstance(image.source, UrlSource):
        algorithm, digest = image.source.checksum
        assert re.fullmatch("[0-9a-f]{" + ("64" if algorithm == "sha256" else "128") + "}", digest)
        assert image.source.url.startswith("https://")
    if image.kind == "network-os" and image.source.type != "debootstrap":
        assert image.readiness.method == "serial"
        re.compile(image.readiness.prompt)
    elif image.kind == "network-os":  # a router built here: the agent's own login, the harness's root
        assert image.login.agent is not None and image.login.user == "root"
    elif image.source.type != "debootstrap":
        assert image.login.provision == "cloud-init"
        assert image.boot.mode == "disk"
    if image.source.type == "user":
        assert "testbed image import" in image.source.hint


def test_catalog_has_the_expected_entries() -> None:
    assert set(load_catalog(IMAGES)) >= EXPECTED


def test_sonic_uses_e1000() -> None:
    assert load_image(IMAGES / "sonic-vs.yaml").boot.nic_model == "e1000"


def _debian(tmp_path: Path, **changes: object) -> Path:
    data = yaml.safe_load((IMAGES / "debian-12.yaml").read_text())
    data["source"].update(changes)
    shutil.copytree(IMAGES / "bases", tmp_path / "bases", dirs_exist_ok=True)
    path = tmp_path / "debian-12.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_recipe_key_is_stable(tmp_path: Path) -> None:
    original = load_image(IMAGES / "debian-12.yaml")
    again = load_image(_debian(tmp_path))
    assert recipe_key(original) == recipe_key(again) == recipe_key(original)
    assert re.fullmatch(r"[0-9a-f]{16}", recipe_key(original))


def test_recipe_key_changes_with_the_package_list(tmp_path: Path) -> None:
    original = load_image(IMAGES / "debian-12.yaml")
    assert isinstance(original.source, DebootstrapSource)
    changed = load_image(_debian(tmp_path, packages=[*original.source.packages, "vim-tiny"]))
    assert recipe_key(changed) != recipe_key(original)


def _bad(tmp_path: Path, name: str, text: str) -> InputError:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_image(path)
    return info.value


GOOD = """\
name: {name}
os: {{family: ubuntu, release: "24.04"}}
dialect: debian
source:
  type: url
  url: https://example.invalid/x.img
  sha256: "{sha}"
readiness:
  method: {method}
"""


def test_bad_sha256_names_the_field(tmp_path: Path) -> None:
    err = _bad(tmp_path, "x", GOOD.format(name="x", sha="abc", method="ssh"))
    # pydantic puts the union's tag in the location: source.url.sha256
    assert err.field is not None
    assert err.field.startswith("source.") and err.field.endswith("sha256")
    assert str(tmp_path / "x.yaml") in str(err)


def test_bad_readiness_method_names_the_field(tmp_path: Path) -> None:
    err = _bad(tmp_path, "x", GOOD.format(name="x", sha="0" * 64, method="telnet"))
    assert err.field == "readiness.method"


def test_unknown_key_names_the_field(tmp_path: Path) -> None:
    text = GOOD.format(name="x", sha="0" * 64, method="ssh") + "bogus: 1\n"
    assert _bad(tmp_path, "x", text).field == "bogus"


def test_name_must_match_file(tmp_path: Path) -> None:
    err = _bad(tmp_path, "y", GOOD.format(name="x", sha="0" * 64, method="ssh"))
    assert err.field == "name"

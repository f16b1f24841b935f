"""`testbed image list/show/build` against the project's catalog (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.cli.images import app
from testbed.model.images import load_catalog

runner = CliRunner()
IMAGES = Path(__file__).resolve().parents[3] / "images"


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TESTBED_ROOT", str(IMAGES.parent))
    monkeypatch.setenv("COLUMNS", "250")


def test_list_shows_every_catalog_entry() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    method = {"debootstrap": " build ", "url": " pull ", "user": " import "}
    for name, image in load_catalog(IMAGES).items():
        line = next(ln for ln in lines if f" {name} " in ln)
        assert method[image.source.type] in line and " absent " in line
        assert image.init in line


def test_show_prints_definition_and_how_to_get_it() -> None:
    result = runner.invoke(app, ["show", "openwrt-23.05"])
    assert result.exit_code == 0, result.output
    assert "downloads.openwrt.org" in result.output
    assert "testbed image pull openwrt-23.05" in result.output


def test_unknown_name_exits_2() -> None:
    result = runner.invoke(app, ["show", "windows-95"])
    assert result.exit_code == 2
    assert "unknown image 'windows-95'" in result.stderr and "ubuntu-24.04" in result.stderr


def test_build_of_a_url_image_exits_2() -> None:
    result = runner.invoke(app, ["build", "ubuntu-24.04"])
    assert result.exit_code == 2
    assert "testbed image pull ubuntu-24.04" in result.stderr


def test_build_of_a_user_image_exits_2() -> None:
    result = runner.invoke(app, ["build", "vyos"])
    assert result.exit_code == 2
    assert "testbed image import vyos" in result.stderr


def test_bad_catalog_entry_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "bad.yaml").write_text("name: bad\nos: {family: beos, release: '5'}\n")
    monkeypatch.setenv("TESTBED_ROOT", str(tmp_path))
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 2
    assert "bad.yaml" in result.stderr and "os.family" in result.stderr


def test_build_reports_each_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from testbed.cli import images as image_commands
    from testbed.images.build import ProgressFn
    from testbed.images.store import ImageManifest, ImageStore, StoredImage
    from testbed.model.images import ImageDef

    calls: list[tuple[str, bool]] = []

    async def fake_build(
        image: ImageDef, store: ImageStore, *, force: bool = False, progress: ProgressFn | None = None
    ) -> StoredImage:
        assert progress is not None
        calls.append((image.name, force))
        for stage in ("debootstrap", "configure", "disk", "convert"):
            progress(stage, f"{stage} working")
            progress(stage, f"{stage} last line")
        directory = tmp_path / "built"
        directory.mkdir()
        (directory / "disk.qcow2").write_bytes(b"x")
        return StoredImage(ImageManifest("debian-12", "k" * 16, "debootstrap", "0" * 64, 1), directory)

    monkeypatch.setattr(image_commands, "build_image", fake_build)
    result = runner.invoke(app, ["build", "debian-12", "--force"])
    assert result.exit_code == 0, result.output
    assert calls == [("debian-12", True)]
    assert "convert last line" in result.stderr
    assert "debian-12: key kkkk" in result.stdout

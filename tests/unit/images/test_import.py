"""`import_image` and `testbed image import`: local files registered as catalog images."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from testbed.cli.images import app
from testbed.config import Settings
from testbed.errors import InputError
from testbed.images.importer import import_image
from testbed.images.store import ImageStore
from testbed.model.images import ImageDef, load_catalog

runner = CliRunner()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TESTBED_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("COLUMNS", "250")
    images = tmp_path / "root" / "images"
    images.mkdir(parents=True)
    for name in ("vyos-test", "sonic-test"):
        data = {
            "name": name,
            "kind": "network-os",
            "os": {"family": "vyos", "release": "1.4"},
            "dialect": "vyos",
            "source": {"type": "user", "hint": "build it"},
            "readiness": {"method": "serial", "prompt": "login:"},
        }
        (images / f"{name}.yaml").write_text(yaml.safe_dump(data))
    return tmp_path / "root"


@pytest.fixture
def store(root: Path) -> ImageStore:
    return ImageStore(Settings.from_env().images_dir)


@pytest.fixture
def catalog(root: Path) -> dict[str, ImageDef]:
    return load_catalog(root / "images")


def qcow2(path: Path, size: str = "4M", backing: Path | None = None) -> Path:
    argv = ["qemu-img", "create", "-q", "-f", "qcow2"]
    if backing is not None:
        argv += ["-b", str(backing), "-F", "qcow2"]
    subprocess.run([*argv, str(path), size], check=True)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_import_qcow2_copies_and_leaves_the_file_alone(
    store: ImageStore, catalog: dict[str, ImageDef], tmp_path: Path
) -> None:
    src = qcow2(tmp_path / "vyos.qcow2")
    before = (sha256(src), src.stat().st_mtime_ns, src.stat().st_mode)
    stored = import_image("vyos-test", src, store, catalog)
    assert (sha256(src), src.stat().st_mtime_ns, src.stat().st_mode) == before
    assert stored.manifest.key == before[0]
    assert sha256(stored.disk) == before[0] == stored.manifest.disk_sha256
    assert store.get("vyos-test") == stored
    assert not stored.disk.samefile(src)
    # importing the same file again reuses the cached copy
    assert import_image("vyos-test", src, store, catalog).directory == stored.directory


def test_import_raw_is_converted(store: ImageStore, catalog: dict[str, ImageDef], tmp_path: Path) -> None:
    data = bytearray(1 << 20)
    data[510:512] = b"\x55\xaa"
    src = tmp_path / "sonic.img"
    src.write_bytes(bytes(data))
    stored = import_image("sonic-test", src, store, catalog)
    assert stored.manifest.key == sha256(src)
    out = subprocess.run(
        ["qemu-img", "info", "--output=json", str(stored.disk)], check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(out)["format"] == "qcow2"
    assert src.read_bytes() == bytes(data)


def test_import_refuses_a_backing_file(store: ImageStore, catalog: dict[str, ImageDef], tmp_path: Path) -> None:
    base = qcow2(tmp_path / "base.qcow2")
    overlay = qcow2(tmp_path / "overlay.qcow2", backing=base)
    with pytest.raises(InputError, match="backing file"):
        import_image("vyos-test", overlay, store, catalog)
    assert store.list() == []


def test_cli_import_then_list(root: Path, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "vyos.qcow2")
    result = runner.invoke(app, ["import", "vyos-test", str(src)])
    assert result.exit_code == 0, result.output
    listing = runner.invoke(app, ["list"]).output
    line = next(ln for ln in listing.splitlines() if "vyos-test" in ln)
    assert " imported " in line and sha256(src)[:12] in line
    sonic = next(ln for ln in listing.splitlines() if "sonic-test" in ln)
    assert " absent " in sonic


def test_cli_import_unknown_name_exits_2(root: Path, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "x.qcow2")
    result = runner.invoke(app, ["import", "nosuch", str(src)])
    assert result.exit_code == 2
    assert "unknown image 'nosuch'" in result.stderr
    assert "sonic-test" in result.stderr and "vyos-test" in result.stderr


def test_cli_import_missing_path_exits_2(root: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.qcow2"
    result = runner.invoke(app, ["import", "vyos-test", str(missing)])
    assert result.exit_code == 2
    assert str(missing) in result.stderr and "no such file" in result.stderr


def test_cli_import_not_a_disk_exits_2(root: Path, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a disk\n" * 100)
    result = runner.invoke(app, ["import", "vyos-test", str(text)])
    assert result.exit_code == 2
    assert str(text) in result.stderr and "not a disk image" in result.stderr
    assert ImageStore(Settings.from_env().images_dir).list() == []


def test_cli_import_directory_exits_2(root: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["import", "vyos-test", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a regular file" in result.stderr

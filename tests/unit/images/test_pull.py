"""`pull_image`: file:// and (mocked) http downloads, checksums, decompression, conversion."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from testbed.cli.images import app
from testbed.config import Settings
from testbed.errors import HarnessError, InputError
from testbed.images.pull import pull_image
from testbed.images.store import ImageStore
from testbed.model.images import ImageDef, load_catalog

runner = CliRunner()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TESTBED_HOME and TESTBED_ROOT under tmp_path; returns the project root (with images/)."""
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TESTBED_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("COLUMNS", "250")
    (tmp_path / "root" / "images").mkdir(parents=True)
    return tmp_path / "root"


@pytest.fixture
def store(root: Path) -> ImageStore:
    return ImageStore(Settings.from_env().images_dir)


def qcow2(path: Path, size: str = "4M") -> Path:
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), size], check=True)
    return path


def raw_disk(path: Path, size: int = 1 << 20) -> Path:
    data = bytearray(size)
    data[510:512] = b"\x55\xaa"
    data[4096:4105] = b"some data"
    path.write_bytes(bytes(data))
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def define(
    root: Path, name: str, url: str, sha: str, fmt: str = "qcow2", comp: str = "none", algorithm: str = "sha256"
) -> ImageDef:
    data = {
        "name": name,
        "os": {"family": "debian", "release": "12"},
        "dialect": "debian",
        "source": {"type": "url", "url": url, algorithm: sha, "format": fmt, "compression": comp},
    }
    (root / "images" / f"{name}.yaml").write_text(yaml.safe_dump(data))
    return load_catalog(root / "images")[name]


def info(path: Path) -> dict[str, object]:
    out = subprocess.run(
        ["qemu-img", "info", "--output=json", str(path)], check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


def test_pull_file_url_then_listed_as_present(root: Path, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    define(root, "tiny", src.as_uri(), sha256(src))
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "tiny" in ln)
    assert " pull " in line and " online " in line and " absent " in line

    result = runner.invoke(app, ["pull", "tiny"])
    assert result.exit_code == 0, result.output
    assert "tiny: key" in result.stdout

    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "tiny" in ln)
    assert " present " in line and sha256(src)[:12] in line


async def test_pull_stores_qcow2_under_the_sha256(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    image = define(root, "tiny", src.as_uri(), sha256(src))
    seen: list[tuple[int, int | None]] = []
    stored = await pull_image(image, store, progress=lambda done, total: seen.append((done, total)))
    assert stored.manifest.key == sha256(src)
    assert stored.disk == store.image_dir("tiny") / sha256(src) / "disk.qcow2"
    assert sha256(stored.disk) == stored.manifest.disk_sha256 == sha256(src)
    assert store.get("tiny") == stored
    assert seen and seen[-1] == (src.stat().st_size, src.stat().st_size)
    assert not list(store.image_dir("tiny").glob("*.partial"))


async def test_already_present_is_not_downloaded_again(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    image = define(root, "tiny", src.as_uri(), sha256(src))
    first = await pull_image(image, store)
    src.unlink()  # a second download would fail
    again = await pull_image(image, store)
    assert again.directory == first.directory


async def test_wrong_sha256_leaves_nothing(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    wrong = "0" * 64
    image = define(root, "tiny", src.as_uri(), wrong)
    with pytest.raises(HarnessError) as err:
        await pull_image(image, store)
    assert wrong in str(err.value) and sha256(src) in str(err.value)
    assert store.get("tiny") is None
    assert not store.image_dir("tiny").exists()
    assert store.list() == []


@pytest.mark.parametrize("comp", ["gzip", "xz", "bz2"])
async def test_compressed_pull(root: Path, store: ImageStore, tmp_path: Path, comp: str) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    packed = tmp_path / f"small.qcow2.{comp}"
    compressors: dict[str, Callable[[bytes], bytes]] = {
        "gzip": gzip.compress,
        "xz": lzma.compress,
        "bz2": bz2.compress,
    }
    opener = compressors[comp]
    packed.write_bytes(opener(src.read_bytes()))
    image = define(root, "packed", packed.as_uri(), sha256(packed), comp=comp)
    stored = await pull_image(image, store)
    assert stored.manifest.key == sha256(packed)
    assert sha256(stored.disk) == sha256(src)
    assert not (stored.directory / "download").exists()


async def test_gzip_with_trailing_data_like_openwrt(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = raw_disk(tmp_path / "openwrt.img")
    packed = tmp_path / "openwrt.img.gz"
    packed.write_bytes(gzip.compress(src.read_bytes()) + b"\x00" * 100 + b"metadata trailer")
    image = define(root, "owrt", packed.as_uri(), sha256(packed), fmt="raw", comp="gzip")
    stored = await pull_image(image, store)
    assert info(stored.disk)["format"] == "qcow2"
    assert info(stored.disk)["virtual-size"] == src.stat().st_size


async def test_raw_is_converted_to_qcow2(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = raw_disk(tmp_path / "disk.raw")
    image = define(root, "rawimg", src.as_uri(), sha256(src), fmt="raw")
    stored = await pull_image(image, store)
    details = info(stored.disk)
    assert details["format"] == "qcow2"
    assert details["virtual-size"] == src.stat().st_size
    converted = tmp_path / "back.raw"
    subprocess.run(["qemu-img", "convert", "-O", "raw", str(stored.disk), str(converted)], check=True)
    assert converted.read_bytes() == src.read_bytes()


async def test_declared_qcow2_but_raw_is_refused(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = raw_disk(tmp_path / "disk.raw")
    image = define(root, "liar", src.as_uri(), sha256(src), fmt="qcow2")
    with pytest.raises(HarnessError, match="expected a qcow2 image"):
        await pull_image(image, store)
    assert not store.image_dir("liar").exists()


async def test_declared_gzip_but_plain_is_refused(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    image = define(root, "liar", src.as_uri(), sha256(src), comp="gzip")
    with pytest.raises(HarnessError, match="gzip"):
        await pull_image(image, store)
    assert not store.image_dir("liar").exists()


async def test_http_download_with_progress(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    body = src.read_bytes()
    requests: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(str(request.url))
        return httpx.Response(200, content=body, headers={"content-length": str(len(body))})

    image = define(root, "web", "https://images.example/small.qcow2", sha256(src))
    seen: list[tuple[int, int | None]] = []
    stored = await pull_image(
        image, store, progress=lambda d, t: seen.append((d, t)), transport=httpx.MockTransport(handler)
    )
    assert requests == ["https://images.example/small.qcow2"]
    assert seen[-1] == (len(body), len(body))
    assert sha256(stored.disk) == sha256(src)


async def test_http_error_leaves_nothing(root: Path, store: ImageStore) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(404))
    image = define(root, "web", "https://images.example/missing.qcow2", "1" * 64)
    with pytest.raises(HarnessError, match="HTTP 404"):
        await pull_image(image, store, transport=transport)
    assert not store.image_dir("web").exists()


async def test_user_and_debootstrap_sources_are_input_errors(store: ImageStore) -> None:
    catalog = load_catalog(Path(__file__).resolve().parents[3] / "images")
    with pytest.raises(InputError, match="testbed image import"):
        await pull_image(catalog["vyos"], store)
    with pytest.raises(InputError, match="testbed image build debian-12"):
        await pull_image(catalog["debian-12"], store)


def test_cli_pull_of_user_image_exits_2(root: Path, tmp_path: Path) -> None:
    data = {
        "name": "mine",
        "os": {"family": "vyos", "release": "1.4"},
        "dialect": "vyos",
        "source": {"type": "user", "hint": "get it from the vendor"},
    }
    (root / "images" / "mine.yaml").write_text(yaml.safe_dump(data))
    result = runner.invoke(app, ["pull", "mine"])
    assert result.exit_code == 2
    assert "get it from the vendor" in result.stderr


def sha512(path: Path) -> str:
    return hashlib.sha512(path.read_bytes()).hexdigest()


async def test_sha512_pull_is_checked_and_keyed_by_the_sha512(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    image = define(root, "alpine", src.as_uri(), sha512(src), algorithm="sha512")
    stored = await pull_image(image, store)
    assert stored.manifest.key == sha512(src)
    assert "(sha512)" in stored.manifest.source
    assert sha256(stored.disk) == stored.manifest.disk_sha256 == sha256(src)
    assert store.get("alpine") == stored


async def test_sha512_mismatch_over_http_names_the_algorithm(root: Path, store: ImageStore, tmp_path: Path) -> None:
    src = qcow2(tmp_path / "small.qcow2")
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=src.read_bytes()))
    wrong = "0" * 128
    image = define(root, "web", "https://images.example/small.qcow2", wrong, algorithm="sha512")
    with pytest.raises(HarnessError) as err:
        await pull_image(image, store, transport=transport)
    assert "sha512 mismatch" in str(err.value) and sha512(src) in str(err.value)
    assert not store.image_dir("web").exists()


@pytest.mark.parametrize(
    "checksums",
    [{}, {"sha256": "0" * 64, "sha512": "0" * 128}, {"sha512": "0" * 64}],
    ids=["none", "both", "short-sha512"],
)
def test_a_url_source_takes_exactly_one_checksum(root: Path, checksums: dict[str, str]) -> None:
    data = {
        "name": "x",
        "os": {"family": "alpine", "release": "3.20"},
        "dialect": "alpine",
        "source": {"type": "url", "url": "https://images.example/x.qcow2", **checksums},
    }
    (root / "images" / "x.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as err:
        load_catalog(root / "images")
    assert err.value.field is not None and err.value.field.startswith("source")

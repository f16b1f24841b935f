"""Downloads of `source.type: url` images into the image cache.

Contract of `pull_image`:
- the cache key is the declared checksum (`source.sha256` or `source.sha512`, of the file as
  downloaded, before decompression); an image already cached under that key is returned
  without any download;
- `http(s)://` URLs stream through httpx, `file://` URLs are copied; the checksum (of the
  declared algorithm) is computed while writing, and a mismatch raises `HarnessError` naming
  the algorithm, the expected and the actual value;
- a declared compression (gzip, xz, bz2) is undone, a declared format other than qcow2 is
  converted with `qemu-img convert`; a qcow2 with a backing file is refused;
- all work happens in the store's `<key>.partial` directory, moved into place only when
  complete: on any failure nothing is left in the cache;
- `user` and `debootstrap` sources raise `InputError` saying what to run instead.

The disk helpers (`file_sha256`, `qemu_img_info`, `convert_to_qcow2`, `check_disk`) are shared
with `testbed.images.importer`.
"""

from __future__ import annotations

import asyncio
import bz2
import contextlib
import hashlib
import json
import lzma
import shutil
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import httpx

from testbed.aio import file_lock
from testbed.errors import HarnessError, InputError
from testbed.images.store import ImageManifest, ImageStore, StoredImage
from testbed.model.images import DebootstrapSource, ImageDef, UrlSource, UserSource

ProgressFn = Callable[[int, int | None], None]
"""Called as (bytes downloaded so far, total bytes or None when unknown), on the event loop."""

CHUNK = 1 << 20
# qemu-img's name for each `source.format` value.
QEMU_FORMAT = {"qcow2": "qcow2", "raw": "raw", "vmdk": "vmdk", "vhd": "vpc"}
_MAGIC = {"gzip": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00", "bz2": b"BZh"}


def _definition(image: ImageDef) -> str:
    return f"images/{image.name}.yaml"


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def qemu_img_info(path: Path, fmt: str | None = None) -> dict[str, Any]:
    """`qemu-img info --output=json` of `path` (probing the format unless `fmt` is given).

    Raises `HarnessError` when qemu-img is missing or cannot read the file.
    """
    if shutil.which("qemu-img") is None:
        raise HarnessError("qemu-img not found: apt-get install qemu-utils")
    argv = ["qemu-img", "info", "--output=json"]
    if fmt is not None:
        argv += ["-f", fmt]
    argv.append(str(path))
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise HarnessError(f"qemu-img info {path} failed: {proc.stderr.strip()}")
    info: dict[str, Any] = json.loads(proc.stdout)
    return info


def check_disk(path: Path, fmt: str) -> dict[str, Any]:
    """Check that `path` is a standalone disk image of qemu format `fmt`; return its info.

    Raises `HarnessError` when the probed format differs or the image has a backing file
    (a base image must not reference other files on the host).
    """
    probed = qemu_img_info(path)
    if probed.get("format") != fmt:
        seen = probed.get("format")
        raise HarnessError(f"{path.name}: expected a {fmt} image, qemu-img sees {seen}")
    if probed.get("backing-filename") or probed.get("full-backing-filename"):
        backing = probed.get("backing-filename")
        raise HarnessError(f"{path.name}: has a backing file ({backing}); refusing it")
    return probed


def convert_to_qcow2(src: Path, fmt: str, dest: Path) -> None:
    """`qemu-img convert -f fmt -O qcow2 src dest`; `HarnessError` on failure."""
    proc = subprocess.run(
        ["qemu-img", "convert", "-f", fmt, "-O", "qcow2", str(src), str(dest)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        error = proc.stderr.strip()
        raise HarnessError(f"qemu-img convert {src.name} ({fmt} -> qcow2) failed: {error}")


def _gunzip(src: BinaryIO, dst: BinaryIO) -> None:
    """gzip -d: concatenated members are joined, trailing non-gzip data is ignored (OpenWrt
    appends metadata to its images; Python's gzip module would reject it)."""
    decomp = zlib.decompressobj(wbits=31)
    pending = b""
    while True:
        data = pending or src.read(CHUNK)
        pending = b""
        if not data:
            break
        dst.write(decomp.decompress(data))
        if decomp.eof:
            rest = decomp.unused_data
            while len(rest) < len(_MAGIC["gzip"]):
                more = src.read(len(_MAGIC["gzip"]) - len(rest))
                if not more:
                    break
                rest += more
            if not rest.startswith(_MAGIC["gzip"]):
                return  # trailing garbage: ignored, as gzip -d does
            decomp = zlib.decompressobj(wbits=31)
            pending = rest
    if not decomp.eof:
        raise HarnessError("gzip stream is truncated")


def _decompress(src: Path, dest: Path, compression: str) -> None:
    with src.open("rb") as fh:
        head = fh.read(8)
    if not head.startswith(_MAGIC[compression]):
        raise HarnessError(f"{src.name}: declared {compression}-compressed, but it is not")
    try:
        with src.open("rb") as raw_in, dest.open("wb") as out:
            if compression == "gzip":
                _gunzip(raw_in, out)
            else:
                opener = lzma.open if compression == "xz" else bz2.open
                with opener(raw_in, "rb") as stream:
                    shutil.copyfileobj(stream, out, CHUNK)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise HarnessError(f"{src.name}: {compression} decompression failed: {exc}") from exc


async def _fetch_file(url: str, dest: Path, progress: ProgressFn | None, algorithm: str) -> str:
    parsed = urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise HarnessError(f"{url}: file:// URLs must name a local path")
    path = Path(url2pathname(unquote(parsed.path)))
    try:
        total = path.stat().st_size
    except OSError as exc:
        raise HarnessError(f"{url}: cannot read {path}: {exc.strerror}") from exc
    loop = asyncio.get_running_loop()

    def copy() -> str:
        digest = hashlib.new(algorithm)
        done = 0
        with path.open("rb") as src, dest.open("wb") as out:
            for block in iter(lambda: src.read(CHUNK), b""):
                digest.update(block)
                out.write(block)
                done += len(block)
                if progress is not None:
                    loop.call_soon_threadsafe(progress, done, total)
        return digest.hexdigest()

    try:
        return await asyncio.to_thread(copy)
    except OSError as exc:
        raise HarnessError(f"{url}: copy failed: {exc}") from exc


async def _fetch_http(
    url: str, dest: Path, progress: ProgressFn | None, transport: httpx.AsyncBaseTransport | None, algorithm: str
) -> str:
    digest = hashlib.new(algorithm)
    timeout = httpx.Timeout(30.0, read=120.0)
    client_args: dict[str, Any] = {"follow_redirects": True, "timeout": timeout}
    if transport is not None:
        client_args["transport"] = transport
    try:
        async with (
            httpx.AsyncClient(**client_args) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise HarnessError(f"GET {url}: HTTP {response.status_code}")
            length = response.headers.get("content-length")
            total = int(length) if length and length.isdigit() else None
            done = 0
            with dest.open("wb") as out:
                async for block in response.aiter_bytes(CHUNK):
                    digest.update(block)
                    out.write(block)
                    done += len(block)
                    if progress is not None:
                        progress(done, total)
    except httpx.HTTPError as exc:
        raise HarnessError(f"GET {url}: {exc}") from exc
    return digest.hexdigest()


async def download(
    url: str,
    dest: Path,
    *,
    progress: ProgressFn | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    algorithm: str = "sha256",
) -> str:
    """Write `url` (http, https or file) to `dest`; return the hex `algorithm` digest (sha256
    or sha512) of the bytes written."""
    scheme = urlparse(url).scheme
    if scheme == "file":
        return await _fetch_file(url, dest, progress, algorithm)
    if scheme in ("http", "https"):
        return await _fetch_http(url, dest, progress, transport, algorithm)
    raise HarnessError(f"{url}: unsupported URL scheme '{scheme}' (http, https or file)")


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()


async def pull_image(
    image: ImageDef,
    store: ImageStore,
    *,
    progress: ProgressFn | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> StoredImage:
    """Download, verify and cache a `url` image; return the cached image (made current).

    `transport` replaces httpx's network transport (tests). See the module docstring for the
    full contract.
    """
    source = image.source
    if isinstance(source, UserSource):
        raise InputError(
            _definition(image),
            "source.type",
            f"'{image.name}' has no public download: {source.hint}",
        )
    if isinstance(source, DebootstrapSource):
        raise InputError(
            _definition(image),
            "source.type",
            f"'{image.name}' is built locally: run `testbed image build {image.name}`",
        )
    assert isinstance(source, UrlSource)
    if urlparse(source.url).scheme not in ("http", "https", "file"):
        raise InputError(_definition(image), "source.url", "must be an http, https or file URL")
    _, key = source.checksum
    # pulls of one image take turns, as builds do (testbed.images.build)
    async with file_lock(store.writer_lock(key)):
        cached = store.get(image.name, key)
        if cached is not None:
            store.commit_pointer(image.name, key)
            return cached
        try:
            with store.staged(image.name, key) as staging:
                return await _pull_into(image, source, staging, store, progress, transport)
        except BaseException:
            _remove_if_empty(store.image_dir(image.name))
            raise


async def _pull_into(
    image: ImageDef,
    source: UrlSource,
    staging: Path,
    store: ImageStore,
    progress: ProgressFn | None,
    transport: httpx.AsyncBaseTransport | None,
) -> StoredImage:
    fetched = staging / "download"
    algorithm, expected = source.checksum
    actual = await download(source.url, fetched, progress=progress, transport=transport, algorithm=algorithm)
    if actual != expected:
        raise HarnessError(f"{image.name}: {algorithm} mismatch for {source.url}: expected {expected}, got {actual}")
    unpacked = fetched
    if source.compression != "none":
        unpacked = staging / "unpacked"
        await asyncio.to_thread(_decompress, fetched, unpacked, source.compression)
        fetched.unlink()
    fmt = QEMU_FORMAT[source.format]
    await asyncio.to_thread(check_disk, unpacked, fmt)
    disk = staging / "disk.qcow2"
    if fmt == "qcow2":
        unpacked.rename(disk)
    else:
        await asyncio.to_thread(convert_to_qcow2, unpacked, fmt, disk)
        unpacked.unlink()
    disk.chmod(0o444)
    manifest = ImageManifest(
        name=image.name,
        key=expected,
        source=f"url {source.url} ({algorithm})",
        disk_sha256=await asyncio.to_thread(file_sha256, disk),
        disk_size=disk.stat().st_size,
    )
    return store.commit(staging, manifest)

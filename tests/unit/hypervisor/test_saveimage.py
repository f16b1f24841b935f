"""The save-image header rewrite and the FIFO feed (`testbed.hypervisor.saveimage`), on
synthetic images and a fake libvirt connection that reads the FIFO as libvirt would."""

from __future__ import annotations

import struct
import threading
import time
from pathlib import Path

import pytest

from testbed.errors import HarnessError
from testbed.hypervisor.saveimage import HEADER_LEN, MAGIC, header_bytes, read_save_image, restore_as

XML = "<domain type='qemu'><name>tb-aaaa1111-node</name><uuid>1</uuid></domain>"
COOKIE = b"<cookie><cpu/></cookie>\0"
STREAM = bytes(range(256)) * 4096  # 1 MiB standing in for QEMU's migration stream


def _image(path: Path, *, compressed: int = 0, version: int = 2) -> Path:
    data = XML.encode() + b"\0" + COOKIE + b"\0" * 1000
    fields = struct.pack("<5I", version, len(data), 1, compressed, len(XML) + 1)
    path.write_bytes(MAGIC + fields + b"\0" * 56 + data + STREAM)
    return path


def test_header_roundtrip_keeps_cookie_and_stream_offset(tmp_path: Path) -> None:
    image = read_save_image(_image(tmp_path / "a.mem"))
    assert image.xml == XML and image.cookie == COOKIE and image.was_running == 1
    assert (tmp_path / "a.mem").read_bytes()[image.stream_offset :] == STREAM
    new_xml = XML.replace("aaaa1111", "bbbbbbbb2222").replace("<uuid>1</uuid>", "<uuid>2</uuid>")
    (tmp_path / "b.mem").write_bytes(header_bytes(image, new_xml) + STREAM)
    again = read_save_image(tmp_path / "b.mem")
    assert again.xml == new_xml and again.cookie == COOKIE and again.version == 2
    assert (tmp_path / "b.mem").read_bytes()[again.stream_offset :] == STREAM
    assert again.stream_offset > HEADER_LEN + len(new_xml)


@pytest.mark.parametrize(("kw", "problem"), [({"compressed": 1}, "compression 1"), ({"version": 1}, "version 1")])
def test_unsupported_images_are_refused(tmp_path: Path, kw: dict[str, int], problem: str) -> None:
    with pytest.raises(HarnessError, match=problem):
        read_save_image(_image(tmp_path / "c.mem", **kw))
    (tmp_path / "d.mem").write_bytes(b"not a save image" * 10)
    with pytest.raises(HarnessError, match="bad magic"):
        read_save_image(tmp_path / "d.mem")


class ReadingConn:
    """Reads the FIFO like libvirt (header, then QEMU the rest); `stop_after` bytes then
    closes, `fail` raises before opening it."""

    def __init__(self, stop_after: int | None = None, fail: bool = False) -> None:
        self.stop_after, self.fail = stop_after, fail
        self.read = b""

    def restoreFlags(self, path: str, dxml: str | None, flags: int) -> None:
        assert dxml is None  # the new XML travels in the header
        if self.fail:
            raise RuntimeError("libvirt: cannot restore")
        with open(path, "rb") as fh:
            while chunk := fh.read(65536):
                self.read += chunk
                if self.stop_after is not None and len(self.read) >= self.stop_after:
                    raise RuntimeError("libvirt: XML refused")


def test_restore_as_feeds_new_header_and_the_shared_stream(tmp_path: Path) -> None:
    mem = _image(tmp_path / "n.mem")
    before = mem.read_bytes()
    conn = ReadingConn()
    new_xml = XML.replace("aaaa1111", "cccc3333")
    restore_as(conn, mem, new_xml, tmp_path / "n.fifo", 0)
    assert conn.read == header_bytes(read_save_image(mem), new_xml) + STREAM
    assert mem.read_bytes() == before and not (tmp_path / "n.fifo").exists()


@pytest.mark.parametrize("conn", [ReadingConn(fail=True), ReadingConn(stop_after=1)], ids=["before-open", "mid-read"])
def test_a_failed_restore_raises_promptly_and_leaves_no_fifo(tmp_path: Path, conn: ReadingConn) -> None:
    mem = _image(tmp_path / "f.mem")
    threads = threading.active_count()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="libvirt"):
        restore_as(conn, mem, XML, tmp_path / "f.fifo", 0)
    assert time.monotonic() - t0 < 10
    assert not (tmp_path / "f.fifo").exists() and threading.active_count() == threads

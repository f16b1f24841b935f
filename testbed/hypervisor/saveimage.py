"""Restoring a libvirt save image under another identity (name, UUID, networks).

libvirt refuses to restore a save image with an XML whose domain name or UUID differs from
the one stored in it (its ABI check: "Target domain uuid ... does not match source"), and
two domains cannot share a name or UUID. So one saved memory state could serve only one
running domain at a time. The save image is a small header, the domain XML and a cookie,
then QEMU's migration stream (libvirt's `qemu_saveimage.c`):

    magic "LibvirtQemudSave" (16 bytes), then little-endian uint32: version, data_len,
    was_running, compressed, cookieOffset, 14 unused; then data_len bytes holding the XML
    (NUL-terminated) and, at cookieOffset, the cookie; then the migration stream.

`restore_as` restores a save image with a new XML *in the header* without copying or
changing the image: it makes a FIFO, hands that path to `virDomainRestoreFlags`, and writes
a rebuilt header (the new XML, the same cookie) into it followed by the image's stream,
read straight from the shared file. libvirt reads the header from the FIFO, checks the new
XML against itself (so the ABI check passes), and passes the FIFO to QEMU for the
stream. The saved image is only read: any number of domains restore from it at once.

Limits: only uncompressed images (`compressed` = 0, libvirt's default `save_image_format`
"raw") of header version 2. The guest-visible machine (MACs, disks' guest side, CPU) must
not change: the new XML differs in libvirt's identity (name, UUID), host-side paths and
network names only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.errors import HarnessError

MAGIC = b"LibvirtQemudSave"
_FIELDS = struct.Struct("<5I")  # version, data_len, was_running, compressed, cookieOffset
HEADER_LEN = len(MAGIC) + 19 * 4  # 5 fields and 14 unused uint32
_PAD = 64 * 1024  # room libvirt leaves after the XML, kept (libvirt edits the XML in place)


@dataclass(frozen=True)
class SaveImage:
    """The parsed head of a save image."""

    version: int
    was_running: int
    xml: str
    cookie: bytes  # NUL-terminated cookie, or b"" without one
    stream_offset: int  # where the migration stream starts in the file


def read_save_image(path: Path) -> SaveImage:
    """Parse the head of the save image at `path` (`HarnessError` if it is not one this
    module can restore: another magic, version, or a compressed image)."""
    with path.open("rb") as fh:
        head = fh.read(HEADER_LEN)
        if len(head) != HEADER_LEN or head[: len(MAGIC)] != MAGIC:
            raise HarnessError(f"{path}: not a libvirt save image (bad magic)")
        version, data_len, was_running, compressed, cookie_offset = _FIELDS.unpack_from(head, len(MAGIC))
        if version != 2 or compressed != 0:
            raise HarnessError(
                f"{path}: save image version {version}, compression {compressed}: only uncompressed "
                'version-2 images can be restored under a new identity (set save_image_format="raw" in qemu.conf)'
            )
        data = fh.read(data_len)
    if len(data) != data_len:
        raise HarnessError(f"{path}: truncated save image header")
    end = data.find(b"\0")
    if end < 0:
        raise HarnessError(f"{path}: save image XML is not terminated")
    cookie = b""
    if cookie_offset:
        cookie_end = data.find(b"\0", cookie_offset)
        cookie = data[cookie_offset : cookie_end + 1 if cookie_end >= 0 else data_len]
    return SaveImage(version, was_running, data[:end].decode(), cookie, HEADER_LEN + data_len)


def header_bytes(image: SaveImage, xml: str) -> bytes:
    """The head of a save image equal to `image` but holding `xml`."""
    body = xml.encode() + b"\0"
    cookie_offset = len(body) if image.cookie else 0
    data = body + image.cookie + b"\0" * _PAD
    fields = _FIELDS.pack(image.version, len(data), image.was_running, 0, cookie_offset)
    return MAGIC + fields + b"\0" * (14 * 4) + data


class _Feeder(threading.Thread):
    """Writes header + stream into the FIFO once libvirt opens it for reading."""

    def __init__(self, fifo: Path, head: bytes, source: Path, offset: int) -> None:
        super().__init__(name=f"restore-feed-{fifo.name}", daemon=True)
        self.fifo, self.head, self.source, self.offset = fifo, head, source, offset
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            fd = self._open()
            if fd is None:
                return
            try:
                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
                _write_all(fd, self.head)
                with self.source.open("rb") as src:
                    _copy(src.fileno(), fd, self.offset)
            finally:
                os.close(fd)
        except BrokenPipeError:
            pass  # the reader went away (libvirt refused the XML, or QEMU stopped reading)
        except OSError as exc:
            self.error = exc

    def _open(self) -> int | None:
        """Open the FIFO's writing end once a reader exists (None when told to stop)."""
        while not self.stop.is_set():
            try:
                return os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                    raise
            time.sleep(0.005)
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _copy(src: int, dst: int, offset: int) -> None:
    """Copy `src` from `offset` to its end into `dst` (sendfile, which splices into a pipe)."""
    size = os.fstat(src).st_size
    while offset < size:
        sent = os.sendfile(dst, src, offset, min(size - offset, 1 << 24))
        if sent == 0:
            return
        offset += sent


def restore_as(conn: Any, image_path: Path, xml: str, fifo: Path, flags: int) -> None:
    """Restore `image_path` through `conn` (a libvirt connection) as the domain `xml`
    (blocking; run it in a thread). `fifo` is a path for the FIFO (made here, removed
    before returning). Raises what `restoreFlags` raises; the image is never written."""
    image = read_save_image(image_path)
    with contextlib.suppress(FileNotFoundError):
        fifo.unlink()
    os.mkfifo(fifo, 0o600)
    feeder = _Feeder(fifo, header_bytes(image, xml), image_path, image.stream_offset)
    feeder.start()
    try:
        conn.restoreFlags(str(fifo), None, flags)
    finally:
        feeder.stop.set()  # a feeder still waiting for a reader (libvirt failed first) gives up
        feeder.join(timeout=30)  # one blocked on a full pipe gets EPIPE: the reader is gone
        with contextlib.suppress(FileNotFoundError):
            fifo.unlink()
    if feeder.error is not None:
        raise HarnessError(f"restore of {image_path}: feeding the save image failed: {feeder.error}")

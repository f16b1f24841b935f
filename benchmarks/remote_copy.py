"""Base-image copy to a remote lab host: testbed's verified volume copy against a bare
`ssh host 'cat > file'` of the same disk over the same link.

Run through the namespace wrapper:  scripts/netns-run .venv/bin/python benchmarks/remote_copy.py [ROUNDS]

The remote host is the one the VM tests use (tests/vm/remote_host.py: a second libvirtd and
an sshd in their own namespaces, reached over a veth as `qemu+ssh://`). Per round:

1. bare: `ssh -F CONFIG HOST 'cat > /var/lib/testbed-remote/bare.qcow2' < disk`;
2. copy: `BaseCopies.ensure` into a fresh pool (create volume, `virStorageVolUpload`, then
   `virStorageVolDownload` and sha256 — the read-back is what makes it verified);
3. verify: a new `BaseCopies` (a new coordinator process) finding the volume present:
   read-back and sha256 only;
4. reuse: the same `BaseCopies` again (no I/O).

Disk, kernel and initrd are all copied by testbed; the bare copy sends the disk only, so
the ratio slightly favours bare. The last line: medians and copy/bare (goal: <= 2.5, since
a verified copy moves the bytes twice).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(rounds: int) -> None:
    import libvirt

    from testbed.config import Settings
    from testbed.hypervisor.volumes import BaseCopies, LibvirtVolumePool
    from testbed.images.store import ImageStore
    from tests.vm.remote_host import remote_lab_host

    libvirt.registerErrorHandler(lambda _c, _e: None, None)
    stored = ImageStore(Settings.from_env().images_dir).get("debian-12")
    if stored is None:
        sys.exit("debian-12 is not built: run `testbed image build debian-12` first")
    size = stored.disk.stat().st_size
    bare, copy, verify, reuse = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp, remote_lab_host(Path(tmp), index=150) as host:
        conn = libvirt.open(host.uri)
        for i in range(rounds):
            t0 = time.monotonic()
            with stored.disk.open("rb") as disk:
                subprocess.run(
                    ["ssh", "-F", str(host.ssh_config), host.address, f"cat > {host.image_cache}-bare-{i}"],
                    stdin=disk, check=True,
                )
            bare.append(time.monotonic() - t0)
            pool = LibvirtVolumePool(conn, f"{host.image_cache}/round{i}", f"bench-{i}")
            copies = BaseCopies(pool)
            t0 = time.monotonic()
            asyncio.run(copies.ensure(stored))
            copy.append(time.monotonic() - t0)
            t0 = time.monotonic()
            asyncio.run(BaseCopies(pool).ensure(stored))
            verify.append(time.monotonic() - t0)
            t0 = time.monotonic()
            asyncio.run(copies.ensure(stored))
            reuse.append(time.monotonic() - t0)
            for name in pool.names():
                pool.delete(name)
            print(f"round {i + 1}: bare {bare[-1]:.2f} s, copy {copy[-1]:.2f} s, verify {verify[-1]:.2f} s, "
                  f"reuse {reuse[-1] * 1000:.1f} ms", flush=True)
        conn.close()
    mb = size / 2**20
    b, c = statistics.median(bare), statistics.median(copy)
    print(f"disk {mb:.0f} MiB; bare ssh {b:.2f} s ({mb / b:.0f} MiB/s), verified copy {c:.2f} s, "
          f"verify only {statistics.median(verify):.2f} s, reuse {statistics.median(reuse) * 1000:.1f} ms; "
          f"copy/bare {c / b:.2f} (goal <= 2.5)")


if __name__ == "__main__":
    if os.environ.get("TESTBED_IN_NETNS") != "1":
        sys.exit("run through scripts/netns-run (it starts a simulated remote host with bridges)")
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)

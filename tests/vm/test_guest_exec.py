"""Guest execution against a real guest, serial-console readiness on the Debian console, and
snapshots of that guest with and without the native helper."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from testbed.db.engine import open_database
from testbed.db.recorder import RunRecorder
from testbed.hypervisor.hostguard import TABLE, ensure_host_guard
from testbed.hypervisor.lab import Lab, LabNode
from testbed.model.topology import Topology
from testbed.model.vocab import SnapshotPoint
from testbed.probes import diff_snapshots
from testbed.runner.recording import CommandRecorder
from testbed.runner.snapshots import EXIT_NO_HELPER, snapshot_node
from testbed.runtime import runtime

pytestmark = pytest.mark.vm


def test_serial_readiness_and_exec_bounds(vm_home: Path, tmp_path: Path) -> None:
    # A serial-readiness variant of debian-12, sharing its cached base image.
    (vm_home / "images" / "debian-12").resolve()
    serial_cache = vm_home / "serial-images"
    serial_cache.mkdir()
    (serial_cache / "debian-12-serial").symlink_to((vm_home / "images" / "debian-12").resolve())
    asyncio.run(_exercise(serial_cache, tmp_path))


async def _exercise(serial_cache: Path, tmp_path: Path) -> None:
    async with runtime() as rt:
        base = rt.catalog["debian-12"]
        serial = base.model_copy(
            update={
                "name": "debian-12-serial",
                # 600 s: three VM tests share two cores in CI, and a loaded TCG boot has taken 300 s
                "readiness": base.readiness.model_copy(
                    update={"method": "serial", "prompt": r"login: *$", "timeout_s": 600}
                ),
            }
        )
        catalog = {**rt.catalog, "debian-12-serial": serial}
        settings = rt.settings

        from testbed.images.store import ImageStore

        topo = Topology(name="serial", nodes=[{"name": "box", "image": "debian-12-serial", "memory": 512}])
        lab = Lab(topo, catalog, settings=settings, hypervisor=rt.hypervisor, accel=rt.accel.accel)
        lab.store = ImageStore(serial_cache)
        async with lab:
            box = lab.nodes["box"]
            console = box.console_log.read_text(errors="replace")
            assert "login:" in console
            # readiness came from the console; SSH comes up on its own shortly after
            from testbed.guest.readiness import wait_for_ssh

            await wait_for_ssh(box.session, timeout=120, alive=box.is_running, name="box")

            ok = await box.exec("echo out; echo err >&2; exit 3")
            assert (ok.exit_code, ok.stdout, ok.stderr) == (3, "out\n", "err\n")
            assert ok.duration_ms >= 0 and not ok.timed_out

            t0 = time.monotonic()
            slow = await box.exec("sleep 30; echo never", timeout=3)
            assert slow.timed_out and "never" not in slow.stdout
            assert time.monotonic() - t0 < 20
            survivors = await box.exec("pgrep -x sleep || true")
            assert survivors.stdout.strip() == "", "the timed-out command's processes must be gone"

            big = await box.exec("head -c 300000 /dev/zero | tr '\\0' x", max_output=10_000)
            assert big.stdout_truncated and len(big.stdout) < 11_000 and big.stdout.startswith("xxx")

            # more concurrent commands than sshd's MaxSessions 10: all complete
            many = await asyncio.gather(*(box.exec(f"sleep 1; echo {i}") for i in range(14)))
            assert sorted(int(r.stdout) for r in many) == list(range(14))

            payload = bytes(range(256)) * 40
            await box.upload(payload, "/root/blob.bin", mode=0o600)
            assert await box.download("/root/blob.bin") == payload
            mode = await box.exec("stat -c %a /root/blob.bin")
            assert mode.stdout.strip() == "600"

            await _host_services_unreachable(lab, box)
            await _native_snapshots_match_portable_ones(box, tmp_path)

            # a dropped connection is re-established on the next command
            await box.session.close()
            again = await box.exec("hostname")
            assert again.stdout.strip() == "box"

            # cheap logins (images/guestfiles/configure.sh): the listener forks each
            # connection without re-exec (`-r`, OpenSSH 9.2 here), and no login has run the
            # dynamic motd (pam_motd would have written /run/motd.dynamic by now)
            listener = await box.exec("tr '\\0' ' ' < /proc/$(cat /run/sshd.pid)/cmdline")
            assert "-r" in listener.stdout.split(), listener.stdout
            assert (await box.exec("test -e /run/motd.dynamic")).exit_code == 1


async def _native_snapshots_match_portable_ones(box: LabNode, tmp_path: Path) -> None:
    """The first snapshot finds no helper on the fresh guest (exit EXIT_NO_HELPER before
    reading the script), places it once and runs with it; the next finds it in place; a
    snapshot without it (TESTBED_NATIVE_PROBE=0) diffs as nothing changed against it."""
    db = open_database(f"sqlite:///{tmp_path / 'snapshots.db'}")
    commands = CommandRecorder(RunRecorder.create(db, task_id="native", agent="harness", image="debian-12"))
    first = await snapshot_node(box, commands, SnapshotPoint.BEFORE_SETUP)
    native = await snapshot_node(box, commands, SnapshotPoint.AFTER_SETUP)
    os.environ["TESTBED_NATIVE_PROBE"] = "0"
    try:
        portable = await snapshot_node(box, commands, SnapshotPoint.AFTER_AGENT)
    finally:
        del os.environ["TESTBED_NATIVE_PROBE"]
    assert (first["_meta"]["native"], native["_meta"]["native"], portable["_meta"]["native"]) == (True, True, False)
    assert first["_meta"]["complete"] and native["_meta"]["complete"] and portable["_meta"]["complete"]
    rows = [c.record for c in commands.journal.commands]
    assert [r.exit_code for r in rows] == [EXIT_NO_HELPER, 0, 0, 0, 0], [(r.command[:60], r.exit_code) for r in rows]
    assert "version" in rows[1].command and "tbprobe-" in rows[1].command
    changed = {p: [c.to_dict() for c in d.items()] for p, d in diff_snapshots(native, portable).items() if not d.empty}
    changed.pop("processes", None)  # the snapshots' own neighbours (sshd sessions) come and go
    assert not changed, changed
    assert not any("/dev/shm/.testbed" in path for path in native["tmp_files"]["entries"])


async def _host_services_unreachable(lab: Lab, box: LabNode) -> None:
    """The host guard: a service on the host's own address of the lab's bridge is refused
    to the guest (TCP and ping), while the host's SSH into the guest keeps working; with
    the guard table removed the same request goes through, so the guard is what blocks."""
    served: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(await reader.read(100))
        writer.write(b"HTTP/1.0 200 OK\r\ncontent-length: 6\r\n\r\nhello\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "0.0.0.0", 0)
    port = server.sockets[0].getsockname()[1]
    assert lab.plan is not None
    host_ip = lab.plan.host_ip
    fetch = f"curl -s -m 5 http://{host_ip}:{port}/"
    try:
        blocked = await box.exec(fetch)
        assert blocked.exit_code != 0 and "hello" not in blocked.stdout and not served
        assert (await box.exec(f"ping -c 1 -W 2 {host_ip}")).exit_code != 0
        subprocess.run(["nft", "delete", "table", "inet", TABLE], check=True)
        try:
            opened = await box.exec(fetch)
            assert opened.exit_code == 0 and opened.stdout == "hello\n", opened
        finally:
            await ensure_host_guard(lab.hv.uri)
        assert (await box.exec(fetch)).exit_code != 0
    finally:
        server.close()
        await server.wait_closed()

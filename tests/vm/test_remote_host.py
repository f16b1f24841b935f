"""A job on a REMOTE lab host (`qemu+ssh://`, simulated by tests/vm/remote_host.py: its own
network namespace, libvirtd, sshd and a private image cache the coordinator cannot see).

One test, two guest boots: the coordinator is SIGKILLed while the run's guest boots on the
remote host, whose libvirtd then auto-destroys the guest (its client connection is gone);
`launch --resume` reaps what is left there (networks, lab volumes), then runs the
replacement to a pass. That shows, on a real second libvirtd:
- the base image (disk, kernel, initrd) copied to the host as volumes and verified there;
- overlays and seeds created as volumes on the host, never as local paths;
- guest SSH (agent commands, snapshots, checks) tunnelled through the host's sshd;
- the host guard installed on the remote host over SSH;
- nothing left on either host afterwards;
- and, since the resume runs on a pty, the Rich live panel on a real terminal.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import libvirt
import pytest
import yaml
from sqlalchemy import select

from testbed.db.engine import open_database
from testbed.db.models import Command, Run
from testbed.hypervisor.xml import LabMetadata
from testbed.testing.cli import read_job_id

from .conftest import ROOT, assert_clean
from .remote_host import RemoteHost, remote_lab_host

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]

TASK = "config-permissions"  # single node, no reboot
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return int(worker) % 50 if worker.isdigit() else 0


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RemoteHost]:
    with remote_lab_host(tmp_path / "remote", index=100 + _worker_index()) as host:
        monkeypatch.setenv("TESTBED_SSH_CONFIG", str(host.ssh_config))
        monkeypatch.setenv("TESTBED_ACCEL", "tcg")  # the remote shares this machine's unusable /dev/kvm
        yield host


def _testbed_objects(conn: libvirt.virConnect) -> dict[str, list[str]]:
    def mine(obj: libvirt.virDomain | libvirt.virNetwork) -> bool:
        try:
            return LabMetadata.from_xml(obj.XMLDesc(0)) is not None
        except libvirt.libvirtError:
            return False

    return {
        "domains": [d.name() for d in conn.listAllDomains(0) if mine(d)],
        "networks": [n.name() for n in conn.listAllNetworks(0) if mine(n)],
    }


def _volumes(conn: libvirt.virConnect, pool: str) -> list[str]:
    try:
        p = conn.storagePoolLookupByName(pool)
    except libvirt.libvirtError:
        return []
    p.refresh(0)
    return sorted(p.listVolumes())


def test_job_on_a_remote_host_survives_a_killed_coordinator(
    vm_home: Path, tmp_path: Path, remote: RemoteHost
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    job = tmp_path / "remote.yaml"
    job.write_text(
        yaml.safe_dump(
            {
                "name": "remote",
                "tasks": [TASK],
                "images": ["debian-12"],
                "agent": "oracle",
                "retry": {"limit": 1, "backoff_s": 1},
                "hosts": [{"name": "far", "uri": remote.uri, "vm_slots": 1, "image_cache": remote.image_cache}],
            }
        )
    )
    conn = libvirt.open(remote.uri)
    local = libvirt.open("qemu:///system")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "testbed.cli", "launch", str(job), "--db", url, "--no-progress"],
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert proc.stdout is not None
            job_id = read_job_id(proc.stdout)
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and not _testbed_objects(conn)["domains"]:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(1)
            booting = _testbed_objects(conn)
            assert booting["domains"], "no guest appeared on the remote host"
            # the lab is remote only: nothing of it on the coordinator's libvirtd
            assert not any(LabMetadata.from_xml(d.XMLDesc(0)) for d in local.listAllDomains(0)
                           if d.name() in booting["domains"])
            # its overlay and seed are volumes on the remote host, invisible here
            lab_files = _volumes(conn, "testbed-labs")
            assert any(v.endswith(".qcow2") for v in lab_files) and any(v.endswith(".seed.tar") for v in lab_files)
            assert not Path(remote.image_cache).exists()
            time.sleep(5)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        # the dead coordinator's qemu+ssh connection closed, so libvirt there auto-destroyed
        # its guest; its networks and lab volumes wait for the reaper
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _testbed_objects(conn)["domains"]:
            time.sleep(1)
        left = _testbed_objects(conn)
        assert left["domains"] == [] and left["networks"], left
        assert _volumes(conn, "testbed-labs"), "the killed lab's volumes should still be there"

        # resumed on a terminal (a pty from `script`): the Rich live panel is what it shows
        resumed = subprocess.run(
            ["script", "-qec", shlex.join([sys.executable, "-m", "testbed.cli", "launch", "--resume", job_id[:10],
                                           "--db", url]), "/dev/null"],
            cwd=ROOT, env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"},
            capture_output=True, text=True, timeout=2000, check=False,
        )
        screen = ANSI.sub("", resumed.stdout)
        assert resumed.returncode == 0 and "complete" in screen, screen[-3000:]
        assert "\x1b[" in resumed.stdout and "VM slots" in screen and "verifying" in screen
        assert re.search(r"far\s+1/1", screen) and re.search(r"far\s+0/1", screen), screen[-3000:]
        assert re.search(r"passed 1\s+failed 0", screen), screen[-3000:]
        db = open_database(url)
        with db() as s:
            runs = list(s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.created_at)))
            final = [r for r in runs if r.id not in {x.retry_of for x in runs if x.retry_of}]
            assert len(final) == 1 and final[0].outcome == "passed", [(r.id[:8], r.outcome, r.error) for r in runs]
            assert remote.uri in (final[0].host or "")
            commands = s.scalars(select(Command).where(Command.run_id == final[0].id)).all()
            assert commands and all(c.exit_code is not None for c in commands)

        # nothing left on the remote host: no domain, network or lab volume ...
        assert _testbed_objects(conn) == {"domains": [], "networks": []}
        assert _volumes(conn, "testbed-labs") == []
        # ... but the verified base image copies stay, named by the image's content key
        images = _volumes(conn, "testbed-images")
        assert any(v.startswith("debian-12-") and v.endswith(".qcow2") for v in images), images
        assert any(v.endswith(".kernel") for v in images) and any(v.endswith(".initrd") for v in images), images
        guard = subprocess.run(
            ["ssh", "-F", str(remote.ssh_config), remote.address, "nft list table inet testbed_guard"],
            capture_output=True, text=True, timeout=30, check=False,
        )
        assert guard.returncode == 0 and "drop" in guard.stdout, guard.stderr
    finally:
        conn.close()
        local.close()
    assert_clean(vm_home)

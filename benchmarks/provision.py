"""Provisioning: testbed vs bare QEMU, request to SSH-ready, one debian-12 node.

Run through the namespace wrapper:  scripts/netns-run .venv/bin/python benchmarks/provision.py [ROUNDS]

For each round (interleaved, after one unmeasured warm-up of each so libvirt's QEMU
capability probe is not counted):
- testbed: `Lab` of topologies/single.yaml (leases, overlay, networks, domain, pinned-key SSH);
- bare: qemu-system-x86_64 with the same kernel, initrd, cmdline, memory, vCPUs and
  accelerator on its own overlay, user-mode networking with a loopback port forward, and the
  same seed passed by -fw_cfg; ready when SSH with the pinned key runs `true`. It is moved
  into a child of libvirt's `machine` cgroup so both compete for CPU on equal terms.
Both use the same readiness loop. Also measures overlay creation on the real base and on an
8 GiB base, to show its cost does not grow with the base's size.
The last line: medians, their ratio (goal <= 1.10) and the overlay time (goal < 100 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testbed.guest.readiness import wait_for_ssh  # noqa: E402
from testbed.guest.ssh import GuestSession, generate_key, public_key_line  # noqa: E402
from testbed.hypervisor.lab import Lab  # noqa: E402
from testbed.hypervisor.overlays import create_overlay  # noqa: E402
from testbed.hypervisor.seed import InterfaceConfig, SeedSpec, write_seed  # noqa: E402
from testbed.images.store import ImageStore  # noqa: E402
from testbed.model.topology import load_topology  # noqa: E402
from testbed.runtime import runtime  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def testbed_round(rt, topo) -> float:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    async with Lab(topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel):
        ready = time.monotonic() - t0
    return ready


async def bare_round(stored, memory: int, accel: str, image) -> float:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory(prefix="bench-bare-") as tmp:
        t0 = time.monotonic()
        overlay = await create_overlay(stored.disk, Path(tmp) / "disk.qcow2")
        client, host = generate_key(), generate_key()
        host_pub = public_key_line(host)
        mac = "52:54:00:12:34:56"
        seed = write_seed(
            SeedSpec(
                hostname="bare",
                authorized_keys=[public_key_line(client)],
                host_key_private=host.export_private_key("openssh").decode(),
                host_key_public=host_pub + "\n",
                interfaces=[InterfaceConfig(mac=mac, address="10.0.2.15/24", name="mgmt")],
                hosts={},
            ),
            Path(tmp) / "seed.tar",
        )
        port = free_port()
        proc = await asyncio.create_subprocess_exec(
            "qemu-system-x86_64",
            "-accel",
            "kvm" if accel == "kvm" else "tcg",
            "-m",
            str(memory),
            "-smp",
            "1",
            "-machine",
            "pc",
            "-display",
            "none",
            "-nodefaults",
            "-serial",
            "null",
            "-kernel",
            str(stored.kernel),
            "-initrd",
            str(stored.initrd),
            "-append",
            image.boot.cmdline,
            "-drive",
            f"file={overlay},if=virtio,format=qcow2,cache=unsafe",
            "-netdev",
            f"user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:22",
            "-device",
            f"virtio-net-pci,netdev=n0,mac={mac}",
            "-device",
            "virtio-rng-pci",
            "-fw_cfg",
            f"name=opt/testbed/seed,file={seed}",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )

        placed = share_guest_cgroups(proc.pid)

        async def alive() -> bool:
            return proc.returncode is None

        session = GuestSession("127.0.0.1", port=port, client_key=client, host_key=host_pub)
        try:
            await wait_for_ssh(session, timeout=300, alive=alive, name="bare")
            return time.monotonic() - t0
        finally:
            await session.close()
            proc.kill()
            await proc.wait()
            for group in placed:
                with contextlib.suppress(OSError):
                    group.rmdir()


# cgroup roots holding libvirt's guests: v1 controllers that weigh CPU, and v2 (unified)
CGROUP_MACHINE_DIRS = [
    Path("/sys/fs/cgroup/cpu/machine"),
    Path("/sys/fs/cgroup/cpuacct/machine"),
    Path("/sys/fs/cgroup/unified/machine"),
    Path("/sys/fs/cgroup/machine"),
]


def share_guest_cgroups(pid: int) -> list[Path]:
    """Put the bare QEMU beside libvirt's guests, in a child of the `machine` cgroup.

    libvirt places every guest under `machine`, which as a whole weighs as much as one
    process of the root cgroup (cgroup v1 `cpu.shares` 1024): on a busy host a libvirt guest
    gets far less CPU than a QEMU started from a shell. Comparing like with like means the
    bare QEMU competes under the same parent. Returns the groups created (removed after).
    """
    placed = []
    for machine in CGROUP_MACHINE_DIRS:
        if not (machine / "cgroup.procs").exists():
            continue
        group = machine / f"bench-bare-{pid}"
        try:
            group.mkdir(exist_ok=True)
            (group / "cgroup.procs").write_text(f"{pid}\n")
            placed.append(group)
        except OSError as exc:
            print(f"note: cannot place bare QEMU in {group}: {exc}", flush=True)
    return placed


async def overlay_times(base: Path, repeat: int = 20) -> list[float]:
    times = []
    with tempfile.TemporaryDirectory(prefix="bench-ovl-") as tmp:
        for i in range(repeat):
            t0 = time.monotonic()
            await create_overlay(base, Path(tmp) / f"o{i}.qcow2")
            times.append((time.monotonic() - t0) * 1000)
    return times


async def main(rounds: int) -> None:
    async with runtime() as rt:
        image = rt.catalog["debian-12"]
        stored = ImageStore(rt.settings.images_dir).get("debian-12")
        if stored is None:
            raise SystemExit("debian-12 is not built: run `testbed image build debian-12`")
        topo = load_topology(ROOT / "topologies" / "single.yaml", images=set(rt.catalog), default_image="debian-12")
        memory = topo.nodes[0].memory
        print(f"accelerator: {rt.accel.label}; memory {memory} MiB; {rounds} rounds (+1 warm-up each)", flush=True)
        await testbed_round(rt, topo)
        await bare_round(stored, memory, rt.accel.accel, image)
        tb, bare = [], []
        for r in range(rounds):
            tb.append(await testbed_round(rt, topo))
            bare.append(await bare_round(stored, memory, rt.accel.accel, image))
            print(f"round {r + 1}: testbed {tb[-1]:.1f} s, bare QEMU {bare[-1]:.1f} s", flush=True)
        small = await overlay_times(stored.disk)
        with tempfile.TemporaryDirectory(prefix="bench-big-") as tmp:
            big_base = Path(tmp) / "big.qcow2"
            proc = await asyncio.create_subprocess_exec("qemu-img", "create", "-q", "-f", "qcow2", str(big_base), "8G")
            await proc.wait()
            big = await overlay_times(big_base)
        print(
            f"overlay on {stored.disk.stat().st_size / 2**20:.0f} MiB base: median {statistics.median(small):.1f} ms; "
            f"on 8 GiB base: median {statistics.median(big):.1f} ms"
        )
        m_tb, m_bare = statistics.median(tb), statistics.median(bare)
        print(
            f"testbed median {m_tb:.1f} s, bare QEMU median {m_bare:.1f} s, ratio {m_tb / m_bare:.3f} "
            f"(goal <= 1.10); overlay clone {statistics.median(small):.1f} ms (goal < 100 ms)"
        )


if __name__ == "__main__":
    if shutil.which("qemu-system-x86_64") is None:
        raise SystemExit("qemu-system-x86_64 not found")
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))

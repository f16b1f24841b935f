"""A command over the serial console against the same command over SSH.

    scripts/netns-run .venv/bin/python benchmarks/console_exec.py [N]     # a real guest
    .venv/bin/python benchmarks/console_exec.py --local [N]               # no guest

On a guest (frr-router-console, bootstrapped on its console, then reached over SSH): N
runs of `true` and of a command printing 64 KiB, over SSH (`LabNode.exec`) and over the
console channel (`testbed.guest.consolexec`, libvirt's console stream), interleaved.
`--local` measures the console protocol alone: a real shell on a pseudo-terminal against
the same shell started per command (`sh -c`), no guest involved. The last line prints the
medians and the ratios console/SSH (or console/subprocess).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testbed.guest.console import ConsoleSession  # noqa: E402
from testbed.guest.consolexec import ConsoleChannel  # noqa: E402
from testbed.guest.result import ExecResult  # noqa: E402
from testbed.hypervisor.console import LibvirtConsole  # noqa: E402
from testbed.hypervisor.lab import Lab  # noqa: E402
from testbed.images.build import build_image  # noqa: E402
from testbed.images.store import ImageStore  # noqa: E402
from testbed.model.device import ConsoleSpec  # noqa: E402
from testbed.model.topology import topology_from_data  # noqa: E402
from testbed.runtime import runtime  # noqa: E402
from testbed.testing.ptyconsole import PtyConsole  # noqa: E402

BIG = "head -c 49152 /dev/zero | base64"  # 64 KiB of output
Exec = Callable[[str], Awaitable[ExecResult]]


async def timed(run: Exec, command: str, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        done = await run(command)
        times.append(time.perf_counter() - t0)
        assert done.exit_code == 0, done
    return statistics.median(times)


async def compare(name_a: str, a: Exec, name_b: str, b: Exec, n: int) -> None:
    await a("true")
    await b("true")
    small_a, small_b = await timed(a, "true", n), await timed(b, "true", n)
    big_a, big_b = await timed(a, BIG, n), await timed(b, BIG, n)
    print(
        f"true: {name_a} {small_a * 1000:.0f} ms, {name_b} {small_b * 1000:.0f} ms; 64 KiB: {name_a} "
        f"{big_a * 1000:.0f} ms, {name_b} {big_b * 1000:.0f} ms (medians of {n})"
    )
    print(
        f"{name_a}_true_ms={small_a * 1000:.0f} {name_b}_true_ms={small_b * 1000:.0f} "
        f"{name_a}_64k_ms={big_a * 1000:.0f} {name_b}_64k_ms={big_b * 1000:.0f} "
        f"{name_a}_vs_{name_b}_true={small_a / small_b:.2f} {name_a}_vs_{name_b}_64k={big_a / big_b:.2f}"
    )


async def local(n: int) -> None:
    with tempfile.TemporaryDirectory() as work:
        pty = await PtyConsole.login_shell()
        session = ConsoleSession(pty, "local")
        await session.login(ConsoleSpec(prompt=r"# *$", user="root", password="testbed", host_key="true"))
        channel = ConsoleChannel(session, work)

        async def console(command: str) -> ExecResult:
            return await channel.exec(command, timeout=60)

        async def subprocess(command: str) -> ExecResult:
            t0 = time.perf_counter()
            proc = await asyncio.create_subprocess_exec("sh", "-c", command, stdout=-1, stderr=-1)
            out, err = await proc.communicate()
            ms = int((time.perf_counter() - t0) * 1000)
            return ExecResult(command, proc.returncode, out.decode(), err.decode(), datetime.now(UTC), ms)

        await compare("console", console, "subprocess", subprocess, n)
        await session.close()


async def guest(n: int) -> None:
    async with runtime() as rt:
        await build_image(rt.catalog["frr-router-console"], ImageStore(rt.settings.images_dir))
        data = {"name": "bench-console", "nodes": [{"name": "r1", "image": "frr-router-console", "memory": 512}]}
        topo = topology_from_data(data, ROOT / "bench-console.yaml", images=rt.catalog)
        async with Lab(topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel) as lab:
            node = lab.nodes["r1"]
            spec = node.image.console
            assert spec is not None
            session = ConsoleSession(await LibvirtConsole.open(rt.hypervisor, node.domain), node.name)
            await session.login(spec)
            channel = ConsoleChannel(session, spec.work_dir)

            async def console(command: str) -> ExecResult:
                return await channel.exec(command, timeout=120)

            async def ssh(command: str) -> ExecResult:
                return await node.exec(command, timeout=120)

            await compare("console", console, "ssh", ssh, n)
            await session.close()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--local"]
    count = int(args[0]) if args else 20
    asyncio.run(local(count) if "--local" in sys.argv else guest(count))

"""Helper process for the reaper test: holds a lab until it is killed.

Usage: python -m tests.vm.lab_holder TOPOLOGY [--keep-domains]
Prints READY when every node answers SSH, then sleeps forever.
"""

from __future__ import annotations

import asyncio
import sys

from testbed.hypervisor.lab import Lab
from testbed.model.topology import load_topology
from testbed.runtime import runtime

from .conftest import ROOT


async def main(topology: str, autodestroy: bool) -> None:
    async with runtime() as rt:
        topo = load_topology(
            ROOT / "topologies" / f"{topology}.yaml", images=set(rt.catalog), default_image="debian-12"
        )
        async with Lab(
            topo,
            rt.catalog,
            settings=rt.settings,
            hypervisor=rt.hypervisor,
            accel=rt.accel.accel,
            autodestroy=autodestroy,
        ):
            print("READY", flush=True)
            await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], "--keep-domains" not in sys.argv))

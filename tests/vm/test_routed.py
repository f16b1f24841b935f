"""The routed topology: client reaches server through the forwarding router only."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from testbed.hypervisor.lab import Lab
from testbed.model.topology import load_topology
from testbed.runtime import runtime

from .conftest import ROOT, assert_clean

pytestmark = pytest.mark.vm


def test_routed_client_reaches_server_through_router(vm_home: Path) -> None:
    asyncio.run(_routed(vm_home))
    assert_clean(vm_home)


async def _routed(home: Path) -> None:
    async with runtime() as rt:
        topo = load_topology(ROOT / "topologies" / "routed.yaml", images=set(rt.catalog), default_image="debian-12")
        async with Lab(topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel) as lab:
            client, router, server = lab.nodes["client"], lab.nodes["router"], lab.nodes["server"]
            server_back = server.data_ips["back"]
            resolved = await client.exec("getent hosts server")
            assert resolved.stdout.split()[0] == server_back
            ping = await client.exec("ping -c2 -W3 server")
            assert ping.exit_code == 0, ping.stdout + ping.stderr
            assert "ttl=63" in ping.stdout  # one hop: through the router
            via = await client.exec(f"ip route get {server_back}")
            assert router.data_ips["front"] in via.stdout
            page = await client.exec("curl -sS -o /dev/null -w '%{http_code}' http://server/")
            assert page.stdout.strip() == "200"
            # the router really forwards: turning forwarding off cuts the path
            await router.exec("sysctl -w net.ipv4.ip_forward=0")
            cut = await client.exec("ping -c1 -W2 server")
            assert cut.exit_code != 0

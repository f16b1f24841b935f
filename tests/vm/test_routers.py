"""Routers built here, on links as people write them (topologies/routers.yaml): two
frr-router nodes on a point-to-point link, a LAN with a Debian host behind each.

- the guests name their NICs as the topology does, the routers' interfaces carry the link
  addresses from their FRR configuration, the agent's login is vtysh;
- the hosts reach each other only once OSPF is configured (through the agent's login);
  the router probes show the adjacency and the routes;
- as runs of a task with a persistence check: configuration that was not saved is gone
  after the harness's reboot and the check catches it (`failed`); saved with
  `write memory`, it survives (`passed`, no residue).

Written for the lead to run (inside scripts/netns-run); not run where it was written.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import Action, Agent, AgentContext, Observation
from testbed.db.engine import open_database
from testbed.db.models import Check, Finding, Run, Snapshot
from testbed.hypervisor.lab import Lab, LabNode
from testbed.images.build import build_image
from testbed.images.store import ImageStore
from testbed.model.taskload import load_task
from testbed.model.topology import load_topology
from testbed.model.vocab import Source
from testbed.probes import parse_snapshot, snapshot_script
from testbed.runner.request import RunRequest
from testbed.runner.run import Runner
from testbed.runner.snapshots import probe_command
from testbed.runtime import image_catalog, runtime

from .conftest import ROOT, assert_clean

pytestmark = [pytest.mark.vm, pytest.mark.long, pytest.mark.timeout(3600)]

OSPF = "configure terminal\nrouter ospf\n network 10.0.0.0/16 area 0\nend"
"""The lab's links and LANs (10.0.x), not the management network (10.213+ in these tests)."""


@pytest.fixture(scope="module")
def router_images(vm_home: Path) -> None:
    """frr-router built into the shared image cache (a no-op when its recipe is unchanged)."""
    catalog = image_catalog()
    asyncio.run(build_image(catalog["frr-router"], ImageStore(vm_home / "images")))


async def snapshot(node: LabNode) -> dict[str, Any]:
    done = await node.exec(probe_command(), timeout=300, max_output=32 * 1024 * 1024, stdin=snapshot_script().encode())
    assert done.exit_code == 0, done.stderr[-500:]
    return parse_snapshot(done.stdout)


async def adjacency(router: LabNode, timeout: float = 180) -> dict[str, Any]:
    """Wait until `router` has a Full OSPF neighbour; its neighbour table."""
    deadline = time.monotonic() + timeout
    while True:
        done = await router.exec("vtysh -c 'show ip ospf neighbor json'", timeout=30)
        table = json.loads(done.stdout or "{}").get("neighbors", {})
        if any(str(e.get("nbrState", "")).startswith("Full") for entries in table.values() for e in entries):
            return table
        assert time.monotonic() < deadline, f"no OSPF adjacency on {router.name}: {done.stdout}"
        await asyncio.sleep(3)


def test_hosts_reach_each_other_only_after_ospf_and_the_probes_show_it(vm_home: Path, router_images: None) -> None:
    asyncio.run(_ospf_lab())
    assert_clean(vm_home)


async def _ospf_lab() -> None:
    async with runtime() as rt:
        topo = load_topology(ROOT / "topologies" / "routers.yaml", images=rt.catalog, default_image="debian-12")
        async with Lab(topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel) as lab:
            r1, r2, h1 = lab.nodes["r1"], lab.nodes["r2"], lab.nodes["h1"]
            assert lab.plan is not None
            # names and addresses as the topology says: eth1/eth2 on the routers, by MAC
            links = (await r1.exec("ip -o link show")).stdout
            for iface in lab.plan.ifaces["r1"]:
                assert f": {iface.name}: " in links
            assert "10.0.12.1/30" in (await r1.exec("ip -4 -o addr show dev eth1")).stdout
            assert "10.0.1.2/24" in (await h1.exec("ip -4 -o addr show dev eth1")).stdout
            # the agent's login is the router's CLI
            agent_r1, agent_r2 = r1.as_source(Source.AGENT), r2.as_source(Source.AGENT)
            shown = await agent_r1.exec("show running-config")
            assert shown.exit_code == 0 and " ip address 10.0.12.1/30" in shown.stdout
            refused = await agent_r1.exec("ip route")
            assert refused.exit_code != 0 and "% " in refused.stdout + refused.stderr
            # no routing protocol yet: the hosts cannot reach each other
            assert (await h1.exec("ping -c2 -W2 10.0.2.2", timeout=30)).exit_code != 0
            for agent in (agent_r1, agent_r2):
                configured = await agent.exec(OSPF)
                assert configured.exit_code == 0, configured.stdout + configured.stderr
            table = await adjacency(r1)
            assert any(e["ifaceName"].startswith("eth1") for entries in table.values() for e in entries)
            await adjacency(r2)
            deadline = time.monotonic() + 120
            while (await h1.exec("ping -c2 -W2 10.0.2.2", timeout=30)).exit_code != 0:
                assert time.monotonic() < deadline, "h1 does not reach h2 after OSPF converged"
                await asyncio.sleep(3)
            snap = (await snapshot(r1))["router"]
            assert [v["state"].split("/")[0] for v in snap["ospf_neighbors"].values()] == ["Full"]
            assert [r["protocol"] for r in snap["rib"]["10.0.2.0/24"]] == ["ospf"]
            assert "router ospf > network 10.0.0.0/16 area 0" in snap["unsaved"]
            host = await snapshot(h1)
            assert host["router"] == {"unavailable": "vtysh not found"}


# --------------------------------------------------------------------- persistence runs

TASK_TOML = """
id = "ospf-persist"
category = "network"
topology = "routers"
images = ["debian-12"]

[limits]
agent_time_s = 900
command_time_s = 60

[[checks]]
id = "R1"
description = "h1 reaches h2 across the routers"
node = "h1"
command = "for i in $(seq 20); do ping -c1 -W2 10.0.2.2 >/dev/null && exit 0; sleep 3; done; exit 1"
timeout_s = 150
persist = true

[[checks]]
id = "R2"
description = "r1 has a full OSPF adjacency"
node = "r1"
command = "for i in $(seq 30); do vtysh -c 'show ip ospf neighbor' | grep -q Full && exit 0; sleep 3; done; exit 1"
timeout_s = 120
persist = true

[expected]
router = ["router ospf*"]
"""


class OspfAgent(Agent):
    """Configures OSPF on both routers through their CLI, waits for the adjacency, then
    saves (`write memory`) or not."""

    name = "ospf-script"

    def __init__(self, save: bool) -> None:
        self.save = save
        self.plan: list[Action] = []
        self.waits = 0

    async def start(self, context: AgentContext) -> None:
        self.plan = [Action("r1", OSPF), Action("r2", OSPF), Action("r1", "show ip ospf neighbor")]

    async def next_action(self, last: Observation | None) -> Action | None:
        if last is not None and last.command == "show ip ospf neighbor" and "Full" not in last.stdout:
            self.waits += 1
            if self.waits < 60:
                await asyncio.sleep(3)
                return Action("r1", "show ip ospf neighbor")
        if last is not None and last.command == "show ip ospf neighbor" and self.save:
            self.plan += [Action("r1", "write memory"), Action("r2", "write memory")]
            self.save = False
        return self.plan.pop(0) if self.plan else None


def run_ospf(tmp_path: Path, db: sessionmaker[Session], save: bool) -> str:
    task_dir = tmp_path / "ospf-persist"
    task_dir.mkdir(exist_ok=True)
    (task_dir / "task.toml").write_text(textwrap.dedent(TASK_TOML))
    (task_dir / "instruction.md").write_text("Make h1 reach h2: run OSPF in area 0 on r1 and r2 (vtysh).\n")
    task = load_task(task_dir, images=set(image_catalog()), root=ROOT)
    agent = OspfAgent(save)
    request = RunRequest(task, "debian-12", agent.name, agent_instance=agent)

    async def go() -> str:
        async with runtime() as rt:
            return (await Runner(request, rt, db).execute()).run_id

    return asyncio.run(go())


def checks(db: sessionmaker[Session], run_id: str) -> dict[tuple[str, str], str]:
    with db() as s:
        return {(c.requirement, c.point): c.status for c in s.scalars(select(Check).where(Check.run_id == run_id))}


def router_snapshot(db: sessionmaker[Session], run_id: str, point: str) -> dict[str, Any]:
    with db() as s:
        data = s.scalars(
            select(Snapshot.data).where(Snapshot.run_id == run_id, Snapshot.node == "r1", Snapshot.point == point)
        ).one()
    return dict(data["router"])


def test_unsaved_configuration_is_lost_at_the_reboot_and_saved_configuration_survives(
    vm_home: Path, router_images: None, tmp_path: Path
) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    unsaved = run_ospf(tmp_path, db, save=False)
    found = checks(db, unsaved)
    assert found[("R1", "after_agent")] == "passed" and found[("R2", "after_agent")] == "passed"
    assert found[("R1", "after_reboot")] == "failed"  # works until the next reboot: caught
    with db() as s:
        run = s.get(Run, unsaved)
        assert run is not None and run.outcome == "failed"
    after = router_snapshot(db, unsaved, "after_agent")
    assert any(v["state"].startswith("Full") for v in after["ospf_neighbors"].values())
    assert "router ospf > network 10.0.0.0/16 area 0" in after["unsaved"]
    assert "router ospf > network 10.0.0.0/16 area 0" not in router_snapshot(db, unsaved, "after_reboot")["running"]

    saved = run_ospf(tmp_path, db, save=True)
    found = checks(db, saved)
    assert all(status == "passed" for status in found.values()), found
    with db() as s:
        run = s.get(Run, saved)
        assert run is not None and run.outcome == "passed"
        left = s.scalars(select(Finding).where(Finding.run_id == saved, Finding.kind == "residue")).all()
    # the OSPF the task asked for, its routes and write memory's files are not residue
    assert not [f.summary for f in left if str((f.evidence or {}).get("subject", "")).startswith("router:")]
    rebooted = router_snapshot(db, saved, "after_reboot")
    assert rebooted["unsaved"] == [] and "router ospf > network 10.0.0.0/16 area 0" in rebooted["saved"]
    assert_clean(vm_home)

"""Fast reset on a real guest (1 cold boot, then restores): episodes of the environment API
start from the task's saved post-setup state, several of them at once.

Episode 1 builds the slot (cold boot + setup, saved, restored in place) and stays open;
episodes 2 and 3 are restored from it while it runs: three labs whose guests hold the same
addresses and MACs side by side. Each one changes its machine (a file, a stopped service);
each starts from the same post-setup state, sees no other episode's change, and receives
no packet another one sends (a UDP broadcast on the management segment). libvirt shows
three domains with distinct names, UUIDs and run ids. The reset times are printed (not
asserted). Nothing is left after the episodes are deleted but the slot and its lease, and
nothing at all once the slot is removed.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from testbed.db.engine import open_database
from testbed.db.models import Command, Phase, Run, Snapshot
from testbed.server.envapi.app import create_app
from testbed.server.envapi.backend import open_runner_manager

from .conftest import ROOT, assert_clean, leftovers, run_cli

pytestmark = [pytest.mark.vm, pytest.mark.timeout(1800)]

TASK = "web-port-conflict"
MAX_SAVED_MIB = 280  # a 512 MiB debian-12 guest after setup: about 200 MiB saved (zeroed free pages are flags)
AUTH = {"Authorization": "Bearer fr-token"}
LOOK = (
    "echo files=$(ls /root | grep ^episode | tr '\\n' ' '); "
    "echo legacy=$(systemctl is-active legacy-http); echo nginx=$(systemctl is-active nginx); "
    "echo port80=$(ss -Hltn 'sport = :80' | wc -l); "
    "echo unit=$(test -f /etc/systemd/system/legacy-http.service && echo yes || echo no)"
)


def _look(c: TestClient, eid: str) -> dict[str, str]:
    obs = _step(c, eid, LOOK)
    assert obs["exit_code"] == 0, obs
    return dict(line.split("=", 1) for line in obs["stdout"].strip().splitlines())


def _step(c: TestClient, eid: str, command: str) -> dict:
    r = c.post(f"/v1/episodes/{eid}/step", json={"node": "node", "command": command}, headers=AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["done"] is False, body
    return body["observation"]


def _reset(c: TestClient) -> tuple[str, str, float]:
    t0 = time.monotonic()
    r = c.post("/v1/episodes", json={"task": TASK}, headers=AUTH)
    elapsed = time.monotonic() - t0
    assert r.status_code == 201, r.text
    return r.json()["episode_id"], r.json()["run_id"], elapsed


LISTEN = (
    "setsid nohup python3 -c \"import socket, time\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('', 9999)); s.settimeout(1)\n"
    "end = time.time() + 60\n"
    "while time.time() < end:\n"
    "    try: data = s.recv(100)\n"
    "    except OSError: continue\n"
    "    open('/root/udp.log', 'a').write(data.decode() + chr(10))\n"
    "\" >/dev/null 2>&1 < /dev/null &"
)


def _broadcast(tag: str) -> str:
    """Three UDP broadcasts on the management segment (eth0) carrying `tag`."""
    return (
        'python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1); "
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b'eth0'); "
        f"[s.sendto(b'{tag}', ('255.255.255.255', 9999)) for _ in range(3)]\""
    )


def _domains(run_ids: list[str]) -> dict[str, tuple[str, str]]:
    """run id -> (domain name, UUID) of the running domains whose metadata names it."""
    import libvirt

    conn = libvirt.open("qemu:///system")
    try:
        found = {}
        for dom in conn.listAllDomains():
            xml = dom.XMLDesc(0)
            for run_id in run_ids:
                if run_id in xml:
                    found[run_id] = (dom.name(), dom.UUIDString())
        return found
    finally:
        conn.close()


def test_concurrent_episodes_restored_from_one_state(vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    app = create_app(open_runner_manager(db, ROOT, max_episodes=3, step_timeout_s=120, fast_reset=True), "fr-token")
    episodes: list[str] = []
    run_ids: list[str] = []
    times = []
    with TestClient(app) as c:
        for n in (1, 2, 3):  # all three stay open: 2 and 3 restore beside the lab that built the state
            eid, run_id, took = _reset(c)
            episodes.append(eid)
            run_ids.append(run_id)
            times.append(took)
            before = _look(c, eid)
            # the post-setup state: the broken condition (legacy-http holds port 80, nginx is
            # down) and no trace of any other episode
            assert before == {"files": "", "legacy": "active", "nginx": before["nginx"], "port80": "1", "unit": "yes"}
            assert before["nginx"] != "active", before
            change = _step(c, eid, f"touch /root/episode{n} && systemctl stop legacy-http")
            assert change["exit_code"] == 0, change
            after = _look(c, eid)
            assert after["files"].split() == [f"episode{n}"] and after["port80"] == "0", after
        # no packet crosses: each listens, each broadcasts its tag, each hears only its own
        for eid in episodes:
            assert _step(c, eid, LISTEN)["exit_code"] == 0
        time.sleep(2)
        for n, eid in enumerate(episodes, 1):
            sent = _step(c, eid, _broadcast(f"from-episode{n}"))
            assert sent["exit_code"] == 0, sent
        time.sleep(3)
        for n, eid in enumerate(episodes, 1):
            heard = set(_step(c, eid, "cat /root/udp.log")["stdout"].split())
            assert heard == {f"from-episode{n}"}, (n, heard)
        # three domains at once, each its own name and UUID, each naming its own run
        domains = _domains(run_ids)
        assert set(domains) == set(run_ids), domains
        assert len({name for name, _ in domains.values()}) == 3 and len({u for _, u in domains.values()}) == 3
        for eid in episodes:
            final = c.delete(f"/v1/episodes/{eid}", headers=AUTH)
            assert final.status_code == 200, final.text
            assert final.json()["outcome"] == "failed", final.json()  # nginx still down: the task is unsolved
    cold, restored = times[0], min(times[1:])
    print(
        f"\nreset times: cold (build) {cold:.1f} s, restored beside it {times[1]:.1f} s / {times[2]:.1f} s, "
        f"ratio {cold / restored:.1f}x"
    )
    with db() as s:
        modes = [s.get(Run, r).config["fast_reset"]["mode"] for r in run_ids]  # type: ignore[union-attr]
        assert modes == ["build", "restore", "restore"]
        for run_id in run_ids:
            points = set(s.scalars(select(Snapshot.point).where(Snapshot.run_id == run_id)))
            assert {"before_setup", "after_setup", "after_agent"} <= points
            setup = list(s.scalars(select(Command.command).where(Command.run_id == run_id, Command.phase == "setup")))
            assert setup and any("legacy-http" in cmd for cmd in setup)
        # before the save the guest's free memory was zeroed (tbprobe zerofree), once
        zeroed = s.scalars(
            select(Command).where(Command.run_id == run_ids[0], Command.command.contains(" zerofree"))
        ).all()
        assert len(zeroed) == 1 and zeroed[0].exit_code == 0, [(z.command, z.exit_code, z.stderr) for z in zeroed]
        assert int(zeroed[0].stdout.split()[1]) >= 64, zeroed[0].stdout  # "zeroed N MiB"
        detail = s.scalars(select(Phase.detail).where(Phase.run_id == run_ids[1], Phase.name == "setup")).one()
        assert detail and "restored from saved state" in detail and run_ids[0] in detail
    # after the episodes: only the slot (its files and its lease) remains
    left = leftovers(vm_home)
    assert left["domains"] == [] and left["networks"] == [] and left["labs"] == [], left
    assert left["leases"] == [], left  # `leftovers` leaves out the leases saved states keep
    states = list((vm_home / "states" / TASK).iterdir())
    assert len(states) == 1 and (states[0] / "meta.json").is_file()
    # what every restore loads: the memory in use, not the guest's RAM (zero pages are flags)
    saved_mib = sum(f.stat().st_size for f in states[0].glob("*.mem")) / 2**20
    print(f"saved memory image {saved_mib:.0f} MiB")
    assert saved_mib < MAX_SAVED_MIB, saved_mib
    slot_lab = json.loads((states[0] / "meta.json").read_text())["lab_id"]
    assert slot_lab in json.loads((vm_home / "leases" / "leases.json").read_text()), "the slot keeps its lease"
    listed = run_cli("state", "list").stdout
    assert states[0].name in listed
    assert "removed" in run_cli("state", "rm").stdout
    assert not any((vm_home / "states").glob("*/*"))
    assert_clean(vm_home)
    rules = json.loads(subprocess.run(["ip", "-j", "rule"], capture_output=True, text=True, check=True).stdout)
    assert not [r for r in rules if str(r.get("table", "")).startswith("19")], rules  # mgmtroute's tables are gone

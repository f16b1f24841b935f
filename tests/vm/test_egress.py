"""Controlled egress on a real guest of every release in the matrix (issue 15, section 2).

debian-12 runs in every CI run; debian-11, debian-13, debian-12-openrc and debian-13-cloud
(BIOS and UEFI) are `long` (scripts/test-long.sh). One guest per release, shared by every
assertion:
- `egress: none` (as today): `apt-get install -y haproxy` fails, the guest has no way out;
- `egress: mirror`: the same install succeeds through the lab host's Squid, and the lab's
  egress log holds the fetches (Debian's mirror, the haproxy .deb); a host outside the
  allowlist is refused (403) and logged `denied`;
- `egress: {allow: ["*.invalid"]}`: a name that does not resolve is answered 503 and
  logged `dns_failure`;
- the rows go into the run database and come back for `runs show` and the analyses.

Squid and its relay run in the host's network namespace (TESTBED_EGRESS_NETNS, set by
scripts/netns-run); Squid resolves names through a DNS stub started there too, which
answers NXDOMAIN for `.invalid` itself and forwards other names to the host's resolver, so
no name but the mirrors' is ever looked up outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from testbed.db.engine import open_database
from testbed.db.recorder import RunRecorder, create_run
from testbed.db.records import EgressRecord
from testbed.egress.analysis import downloads, repositories
from testbed.egress.hub import NETNS_ENV, EgressHub, EgressSettings, LabEgress
from testbed.egress.lab import start_egress
from testbed.egress.proxy import in_netns, stop_process
from testbed.egress.query import egress_rows
from testbed.egress.render import egress_json
from testbed.hypervisor.lab import Lab, LabNode
from testbed.model.egress import EgressMode, EgressSpec
from testbed.model.images import DebootstrapSource
from testbed.model.topology import NodeSpec, Topology
from testbed.model.vocab import EgressDecision
from testbed.runtime import runtime
from tests.egress_dns import system_resolver

pytestmark = pytest.mark.vm

IMAGES = ["debian-11", "debian-12", "debian-12-openrc", "debian-13", "debian-13-cloud", "debian-13-cloud-uefi"]
RELEASES = [pytest.param(image, marks=() if image == "debian-12" else pytest.mark.long, id=image) for image in IMAGES]

ROOT = Path(__file__).resolve().parents[2]
INSTALL = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y -o Acquire::Retries=0 haproxy"
PROFILE = ". /etc/profile.d/testbed-proxy.sh && "


@contextlib.asynccontextmanager
async def dns_stub() -> AsyncIterator[str]:
    """The DNS stub in the proxy's network namespace; yields its address."""
    address = f"127.53.{random.randint(1, 254)}.{random.randint(1, 254)}"
    argv = [sys.executable, "-m", "tests.egress_dns", address]
    upstream = system_resolver()
    if upstream:
        argv.append(upstream)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = await asyncio.create_subprocess_exec(
        *in_netns(argv, os.environ.get(NETNS_ENV)), stdout=asyncio.subprocess.PIPE, env=env, cwd=ROOT
    )
    try:
        assert proc.stdout is not None
        assert await asyncio.wait_for(proc.stdout.readline(), 20) == b"ready\n"
        yield address
    finally:
        await stop_process(proc, 5)


async def http_code(node: LabNode, url: str) -> str:
    result = await node.exec(PROFILE + f"curl -s -o /dev/null -w '%{{http_code}}' --max-time 60 {url}", timeout=90)
    return result.stdout.strip()


@pytest.mark.parametrize("image", RELEASES)
def test_apt_through_the_proxy_denials_and_dns_failures_are_logged(vm_home: Path, image: str) -> None:
    asyncio.run(_exercise(vm_home, image))


async def _exercise(home: Path, image: str) -> None:
    assert os.environ.get(NETNS_ENV), "scripts/netns-run must name the host's network namespace"
    async with runtime() as rt:
        source = rt.catalog[image].source
        assert isinstance(source, DebootstrapSource), f"{image} is not built from Debian's mirror"
        topo = Topology(name="egress", nodes=[NodeSpec(name="box", image=image, memory=768)])
        lab = Lab(topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel)
        async with lab:
            box = lab.nodes["box"]
            none = await box.exec(INSTALL, timeout=300)
            assert not none.ok, "egress none: the guest must have no way to the mirror"
            assert not (await box.exec("command -v haproxy")).ok

            async with dns_stub() as resolver:
                settings = EgressSettings.from_env()
                settings = EgressSettings(netns=settings.netns, nameservers=(resolver,), mirrors=settings.mirrors)
                async with EgressHub(settings) as hub:
                    mirror = await _mirror_phase(lab, box, hub, source.suite)
                    dns = await _allow_phase(lab, box, hub)
            _stored(home / image, mirror + dns)


async def _mirror_phase(lab: Lab, box: LabNode, hub: EgressHub, suite: str) -> list[EgressRecord]:
    async with start_egress(lab, EgressSpec(mode=EgressMode.MIRROR), hub) as egress:
        installed = await box.exec(INSTALL, timeout=1200)
        assert installed.ok, installed.stderr[-2000:]
        assert (await box.exec("haproxy -v")).ok
        assert await http_code(box, "http://example.com/") == "403"
        await http_code(box, "https://example.com/")  # CONNECT refused: curl gets no tunnel (logged below)
    rows = _rows(egress)
    allowed = [r for r in rows if r.decision == EgressDecision.ALLOWED]
    assert any(r.host == "deb.debian.org" and f"/dists/{suite}/" in r.url for r in allowed)
    debs = [r for r in allowed if r.url.endswith(".deb") and "/haproxy" in r.url]
    assert debs and all(r.status == 200 and r.bytes > 100_000 for r in debs)
    denied = [r for r in rows if r.decision == EgressDecision.DENIED]
    assert {r.host for r in denied} >= {"example.com"}
    assert any(r.method == "CONNECT" and r.url == "example.com:443" for r in denied)
    assert all(r.node == "box" for r in rows)
    return rows


async def _allow_phase(lab: Lab, box: LabNode, hub: EgressHub) -> list[EgressRecord]:
    async with start_egress(lab, EgressSpec.model_validate({"allow": ["*.invalid"]}), hub) as egress:
        assert await http_code(box, "http://repo.nosuch.invalid/debian/dists/stable/InRelease") == "503"
        assert await http_code(box, "http://example.com/") == "403"
    rows = _rows(egress)
    assert [(r.host, r.status, r.decision) for r in rows] == [
        ("repo.nosuch.invalid", 503, EgressDecision.DNS_FAILURE),
        ("example.com", 403, EgressDecision.DENIED),
    ]
    return rows


def _rows(egress: LabEgress) -> list[EgressRecord]:
    rows = egress.records()
    assert rows, "the lab's egress log is empty"
    return rows


def _stored(home: Path, rows: list[EgressRecord]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    sessions = open_database(f"sqlite:///{home / 'egress-vm.db'}")
    run_id = create_run(sessions, task_id="egress-vm", agent="noop")
    assert RunRecorder(sessions, run_id).record_egress(rows) == len(rows)
    with sessions() as session:
        stored = egress_rows(session, run_id)
    section = egress_json(stored)
    assert section["count"] == len(rows) and section["dns_failures"] == 1 and section["denied"] >= 3
    repos = {r.base: r for r in repositories(stored)}
    assert repos["http://deb.debian.org/debian"].status == "resolved"
    assert not repos["http://deb.debian.org/debian"].added
    invalid = repos["http://repo.nosuch.invalid/debian"]
    assert (invalid.added, invalid.status) == (True, "dns_failure")
    assert any(d.package and "haproxy" in d.url for d in downloads(stored))

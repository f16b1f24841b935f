"""The release matrix: cold boot to ready for every local image, testbed vs bare QEMU, and a
package install through the egress proxy, first vs cached.

Run through the namespace wrapper (the install part needs the mirror through the proxy):
    scripts/netns-run .venv/bin/python benchmarks/boot_matrix.py [IMAGE...]

For each image present in the cache (default: every locally built one), one round each,
one guest at a time, on a private TESTBED_HOME whose images/ is the real image cache:
- testbed: a one-node `Lab` of that image (leases, overlay, networks, domain, readiness);
- bare: for kernel-booted images, qemu-system-x86_64 with the same kernel, initrd, cmdline,
  memory and seed (see benchmarks/provision.py, whose bare round this reuses); disk-booted
  images (GRUB, cloud-init) have no bare round here (n/a).
Then, on debian-12 with `egress: mirror`: `apt-get install --download-only haproxy` (the
package and its dependencies) through the proxy, twice, with `apt-get clean` between: the
second round's packages come from the proxy's memory cache (`cache_hits` counts them from
Squid's result codes). The download is timed, not the install: dpkg's unpacking under TCG
is the same with or without a cache.
The last line: per image `boot_<image>_s` and `ratio_<image>` (testbed / bare), and
`download_first_s`, `download_cached_s`, `cached_speedup`, `cache_hits` (hits/.deb fetches).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from testbed.egress.accesslog import LogEntry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

LOCAL = ["debian-11", "debian-12", "debian-13", "debian-12-openrc", "debian-13-cloud", "debian-13-cloud-uefi"]
DOWNLOAD = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --download-only haproxy >/dev/null"


def topology_for(image: str):  # type: ignore[no-untyped-def]
    from testbed.model.topology import load_topology

    topo = load_topology(ROOT / "topologies" / "single.yaml", default_image=image)
    return topo.model_copy(update={"name": f"single-{image}"})


def lab_of(rt, image: str):  # type: ignore[no-untyped-def]
    from testbed.hypervisor.lab import Lab

    return Lab(topology_for(image), rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel)


async def testbed_boot(rt, image: str) -> float:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    async with lab_of(rt, image):
        return time.monotonic() - t0


async def bare_boot(rt, image: str) -> float | None:  # type: ignore[no-untyped-def]
    from provision import bare_round

    from testbed.images.store import ImageStore

    definition = rt.catalog[image]
    if definition.boot.mode != "kernel":
        return None
    stored = ImageStore(rt.settings.images_dir).get(image)
    return await bare_round(stored, max(512, definition.min_memory_mb), rt.accel.accel, definition)


def log_entries(log_path: Path) -> list[LogEntry]:
    """The lab's access log so far, parsed (`testbed.egress.accesslog.parse_log`)."""
    from testbed.egress.accesslog import parse_log

    return parse_log(log_path.read_text().splitlines()) if log_path.exists() else []


async def installs(rt) -> tuple[float, float, str]:  # type: ignore[no-untyped-def]
    """Download haproxy and its dependencies twice through the proxy (`apt-get clean`
    between): the download is what the proxy's cache can speed up. (Timing a whole
    `apt-get install` measures dpkg's unpacking under TCG, not the fetch.) Returns both
    times and the second round's `hits/debs`."""
    from testbed.egress.lab import start_egress
    from testbed.model.egress import EgressMode, EgressSpec

    assert rt.egress is not None, "the egress proxy needs a local lab host"
    lab = lab_of(rt, "debian-12")
    async with lab, start_egress(lab, EgressSpec(mode=EgressMode.MIRROR), rt.egress) as egress:
        node = next(iter(lab.nodes.values()))
        update = await node.exec("apt-get update -q >/dev/null", timeout=600)
        assert update.ok, update.stderr
        times: list[float] = []
        for _ in range(2):
            clean = await node.exec("apt-get clean", timeout=300)
            assert clean.ok, clean.stderr
            mark = len(log_entries(egress.log_path))
            t0 = time.monotonic()
            fetch = await node.exec(DOWNLOAD, timeout=900)
            times.append(time.monotonic() - t0)
            assert fetch.ok, fetch.stderr
        # Squid's result code of a cached answer says HIT (TCP_MEM_HIT, TCP_HIT, ...).
        debs = [e for e in log_entries(egress.log_path)[mark:] if e.url.endswith(".deb")]
        assert debs, "the second download fetched no .deb through the proxy"
        hits = sum("HIT" in e.squid_status for e in debs)
    return times[0], times[1], f"{hits}/{len(debs)}"


async def main(images: list[str]) -> str:
    from benchmarks.benchhome import private_home
    from testbed.images.store import ImageStore
    from testbed.runtime import runtime

    figures: list[str] = []
    with private_home("bench-boot-"):
        async with runtime() as rt:
            store = ImageStore(rt.settings.images_dir)
            for image in images:
                if store.get(image) is None:
                    print(f"{image}: not in the image cache (testbed image build {image}); skipped", flush=True)
                    continue
                ours = await testbed_boot(rt, image)
                bare = await bare_boot(rt, image)
                ratio = f"{ours / bare:.2f}" if bare else "n/a"
                print(f"{image}: testbed {ours:.1f} s, bare {bare or float('nan'):.1f} s, ratio {ratio}", flush=True)
                figures.append(f"boot_{image}_s={ours:.1f} ratio_{image}={ratio}")
            first, cached, hits = await installs(rt)
            print(f"haproxy download: first {first:.1f} s, cached {cached:.1f} s, cache hits {hits}", flush=True)
            figures.append(f"download_first_s={first:.1f} download_cached_s={cached:.1f}")
            figures.append(f"cached_speedup={first / cached:.2f} cache_hits={hits}")
    return " ".join(figures)


if __name__ == "__main__":
    print(asyncio.run(main(sys.argv[1:] or LOCAL)))

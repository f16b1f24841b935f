"""VM test fixtures: real guests, inside the private namespace of scripts/netns-run.

Every VM test is skipped with the reason when not run under scripts/netns-run (which sets
TESTBED_IN_NETNS): bridges and guests must never appear in the host's own namespace.
Each test session gets a fresh TESTBED_HOME whose `images/` is the user's real image cache
(so the debian-12 base is built once and reused), while labs and leases stay private.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from testbed.config import Settings

if TYPE_CHECKING:
    import libvirt

ROOT = Path(__file__).resolve().parents[2]
IN_NETNS = os.environ.get("TESTBED_IN_NETNS") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if IN_NETNS:
        return
    skip = pytest.mark.skip(
        reason="VM test: must run inside scripts/netns-run (private network namespace with its own "
        "libvirtd); run scripts/test.sh or `scripts/netns-run .venv/bin/pytest -m vm`"
    )
    for item in items:
        if "vm" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def real_images_dir() -> Path:
    """The user's image cache, with debian-12 built (a no-op when the recipe is unchanged)."""
    from testbed.images.build import build_image
    from testbed.images.store import ImageStore
    from testbed.model.images import load_image

    settings = Settings.from_env()
    image = load_image(ROOT / "images" / "debian-12.yaml")
    asyncio.run(build_image(image, ImageStore(settings.images_dir)))
    return settings.images_dir


@pytest.fixture(scope="session")
def vm_home(real_images_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("vmhome")
    (home / "images").symlink_to(real_images_dir)
    old = os.environ.get("TESTBED_HOME")
    os.environ["TESTBED_HOME"] = str(home)
    # pytest-xdist workers share one libvirtd but each has its own TESTBED_HOME (and so its
    # own lease store): give each worker its own part of the subnet pool.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    os.environ["TESTBED_SUBNET_POOL"] = f"10.{213 + index % 8}.0.0/16"
    yield home
    if old is None:
        os.environ.pop("TESTBED_HOME", None)
    else:
        os.environ["TESTBED_HOME"] = old


@pytest.fixture(autouse=True)
def _reap_after_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each VM test, reap whatever it left behind so that one test's leak (already
    reported by its own assertion) cannot fail the next tests on the same worker."""
    yield
    if not IN_NETNS or "vm_home" not in request.fixturenames:
        return
    home = request.getfixturevalue("vm_home")
    if leftovers(home) != {"domains": [], "networks": [], "labs": [], "leases": []}:
        run_cli("reap", check=False)


def run_cli(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the real `testbed` CLI in a subprocess (same environment)."""
    proc = subprocess.run(
        [sys.executable, "-m", "testbed.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"testbed {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def in_home(obj: libvirt.virDomain | libvirt.virNetwork, home: Path) -> bool:
    """Whether a libvirt domain or network belongs to a lab under `home` (by the lab
    directory in its `<tb:lab>` metadata): VM tests of several workers share one libvirtd,
    so a test looks at and touches only its own session's objects."""
    import libvirt

    from testbed.hypervisor.xml import LabMetadata

    try:
        xml = obj.XMLDesc(0)
    except libvirt.libvirtError:
        return False  # another worker's object vanished between list and lookup
    meta = LabMetadata.from_xml(xml)
    return meta is not None and meta.lab_dir.startswith(str(home).rstrip("/") + "/")


def leftovers(home: Path) -> dict[str, list[str]]:
    """Everything of this test session's TESTBED_HOME still present: domains, networks
    (found by the lab directory in their metadata, so tests running side by side on one
    libvirtd do not see each other's), lab dirs and leases."""
    import json

    import libvirt

    conn = libvirt.open(Settings.from_env().libvirt_uri)
    try:
        domains = [d.name() for d in conn.listAllDomains(0) if in_home(d, home)]
        networks = [n.name() for n in conn.listAllNetworks(0) if in_home(n, home)]
    finally:
        conn.close()
    labs = [p.name for p in (home / "labs").iterdir()] if (home / "labs").exists() else []
    lease_file = home / "leases" / "leases.json"
    leases = list(json.loads(lease_file.read_text())) if lease_file.exists() else []
    # a saved post-setup state keeps its lab's lease on purpose (until `testbed state rm`)
    from testbed.hypervisor.slots import SlotStore

    kept = {info.meta.lab_id for info in SlotStore(Settings.from_env()).list() if info.meta is not None}
    leases = [lease for lease in leases if lease not in kept]
    return {"domains": domains, "networks": networks, "labs": labs, "leases": leases}


def assert_clean(home: Path) -> None:
    left = leftovers(home)
    assert left == {"domains": [], "networks": [], "labs": [], "leases": []}, left


def overlay_files(home: Path) -> list[str]:
    return [str(p) for p in home.glob("labs/**/*.qcow2")]


__all__ = ["ROOT", "assert_clean", "leftovers", "overlay_files", "run_cli", "shutil"]

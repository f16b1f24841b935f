"""Host-level settings read from the environment.

Every path lives under `TESTBED_HOME` (default `~/.local/share/testbed`):
`images/` (image cache), `labs/` (one state directory per lab: overlays, seeds, console
logs, owner record), `leases/` (the flock-guarded lease store).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LIBVIRT_URI = "qemu:///system"
METADATA_NS = "https://testbed.dev/xmlns/1"
METADATA_PREFIX = "testbed"


def _mem_total_mb() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 4096


@dataclass(frozen=True)
class Settings:
    """Resolved settings; build with `Settings.from_env()`."""

    home: Path
    libvirt_uri: str
    memory_budget_mb: int
    subnet_pool: str
    accel: str | None

    @classmethod
    def from_env(cls) -> Settings:
        home = Path(os.environ.get("TESTBED_HOME", Path.home() / ".local" / "share" / "testbed")).expanduser()
        budget = os.environ.get("TESTBED_MEMORY_BUDGET_MB")
        accel = os.environ.get("TESTBED_ACCEL") or None
        return cls(
            home=home,
            libvirt_uri=os.environ.get("TESTBED_LIBVIRT_URI", DEFAULT_LIBVIRT_URI),
            memory_budget_mb=int(budget) if budget else int(_mem_total_mb() * 0.75),
            subnet_pool=os.environ.get("TESTBED_SUBNET_POOL", "10.213.0.0/16"),
            accel=accel,
        )

    @property
    def images_dir(self) -> Path:
        return self.home / "images"

    @property
    def labs_dir(self) -> Path:
        return self.home / "labs"

    @property
    def leases_dir(self) -> Path:
        return self.home / "leases"


def project_root() -> Path:
    """The checkout holding images/, topologies/ and tasks/ (env `TESTBED_ROOT` overrides)."""
    env = os.environ.get("TESTBED_ROOT")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent

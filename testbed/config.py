"""Host-level settings read from the environment: the one place that reads and checks them.

Every path lives under `TESTBED_HOME` (default `~/.local/share/testbed`):
`images/` (image cache), `labs/` (one state directory per lab: overlays, seeds, console
logs, owner record), `leases/` (the flock-guarded lease store).

Settings (an empty value is the same as an unset one):

    TESTBED_HOME              a directory (made absolute; an existing non-directory is refused)
    TESTBED_LIBVIRT_URI       a libvirt URI, `driver[+transport]://[user@host[:port]]/path`
    TESTBED_MEMORY_BUDGET_MB  whole MiB, MIN_BUDGET_MB..MAX_BUDGET_MB (default 3/4 of RAM)
    TESTBED_SUBNET_POOL       a private IPv4 network of /24 or larger (default 10.213.0.0/16)
    TESTBED_ACCEL             kvm | tcg (default: probed)
    TESTBED_HOST_GUARD        1/true/yes/on or 0/false/no/off (default on)
    TESTBED_NATIVE_PROBE      1/true/yes/on or 0/false/no/off (default on): snapshots use the
                              native helper where it builds and runs (testbed.probes.native)
    TESTBED_SSH_CONFIG        an existing OpenSSH client config file
    TESTBED_REMOTE_CACHE      an absolute path on remote lab hosts
    TESTBED_ROOT              the checkout holding images/, topologies/ and tasks/

Contract: a malformed value is an `InputError` whose field is the variable's name (exit
status 2). `Settings.from_env()` checks every setting above, so a command that starts with
it refuses a bad one before it creates anything; the readers below are what the lower
layers call when they need one setting, so a value is parsed in one place only.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from testbed.errors import InputError

DEFAULT_LIBVIRT_URI = "qemu:///system"
DEFAULT_SUBNET_POOL = "10.213.0.0/16"
METADATA_NS = "https://testbed.dev/xmlns/1"
METADATA_PREFIX = "testbed"

MIN_BUDGET_MB = 128
MAX_BUDGET_MB = 2**24
"""Bounds of `TESTBED_MEMORY_BUDGET_MB` (one small guest; 16 TiB)."""

POOL_MAX_PREFIX = 24
"""The pool is cut into /24 subnets, so it must be at least that large."""

_LIBVIRT_URI_RE = re.compile(r"^[a-z][a-z0-9]*(\+[a-z0-9]+)?://[^\s]*$")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _mem_total_mb() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 4096


def testbed_home() -> Path:
    """`TESTBED_HOME`, absolute (default `~/.local/share/testbed`)."""
    raw = _env("TESTBED_HOME")
    home = Path(raw).expanduser() if raw else Path.home() / ".local" / "share" / "testbed"
    home = home.absolute()
    if home.exists() and not home.is_dir():
        raise InputError(None, "TESTBED_HOME", f"{home} exists and is not a directory")
    return home


def libvirt_uri() -> str:
    """`TESTBED_LIBVIRT_URI` (default `qemu:///system`)."""
    raw = _env("TESTBED_LIBVIRT_URI")
    if raw is None:
        return DEFAULT_LIBVIRT_URI
    problem = f"{raw!r} is not a libvirt URI (like qemu:///system or qemu+ssh://root@host/system)"
    if not _LIBVIRT_URI_RE.match(raw):
        raise InputError(None, "TESTBED_LIBVIRT_URI", problem)
    try:
        urlsplit(raw).port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise InputError(None, "TESTBED_LIBVIRT_URI", f"{problem}: bad port") from None
    return raw


def memory_budget_mb() -> int:
    """`TESTBED_MEMORY_BUDGET_MB` (default three quarters of the host's memory)."""
    raw = _env("TESTBED_MEMORY_BUDGET_MB")
    if raw is None:
        return int(_mem_total_mb() * 0.75)
    if not raw.isdecimal():
        raise InputError(None, "TESTBED_MEMORY_BUDGET_MB", f"{raw!r} is not a whole number of MiB")
    value = int(raw)
    if not MIN_BUDGET_MB <= value <= MAX_BUDGET_MB:
        raise InputError(
            None, "TESTBED_MEMORY_BUDGET_MB", f"{value} MiB is outside {MIN_BUDGET_MB}..{MAX_BUDGET_MB} MiB"
        )
    return value


def subnet_pool() -> str:
    """`TESTBED_SUBNET_POOL`, normalised (default 10.213.0.0/16)."""
    raw = _env("TESTBED_SUBNET_POOL")
    if raw is None:
        return DEFAULT_SUBNET_POOL
    try:
        net = ipaddress.IPv4Network(raw, strict=True)
    except ValueError as exc:
        raise InputError(None, "TESTBED_SUBNET_POOL", f"{raw!r} is not an IPv4 network ({exc})") from None
    if net.prefixlen > POOL_MAX_PREFIX:
        raise InputError(None, "TESTBED_SUBNET_POOL", f"{net} is smaller than one /{POOL_MAX_PREFIX} subnet")
    if not net.is_private:
        raise InputError(
            None, "TESTBED_SUBNET_POOL", f"{net} is not a private range (use one inside 10/8, 172.16/12 or 192.168/16)"
        )
    return str(net)


def accel_override() -> str | None:
    """`TESTBED_ACCEL`: `kvm`, `tcg` or None (probe the host)."""
    raw = _env("TESTBED_ACCEL")
    if raw is not None and raw not in ("kvm", "tcg"):
        raise InputError(None, "TESTBED_ACCEL", f"{raw!r} is not kvm or tcg")
    return raw


def _flag(name: str) -> bool:
    """A 1/true/yes/on or 0/false/no/off setting (default on)."""
    raw = _env(name)
    if raw is None or raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise InputError(None, name, f"{raw!r} is not 1/true/yes/on or 0/false/no/off")


def host_guard_enabled() -> bool:
    """`TESTBED_HOST_GUARD` (default on)."""
    return _flag("TESTBED_HOST_GUARD")


def native_probe_enabled() -> bool:
    """`TESTBED_NATIVE_PROBE` (default on)."""
    return _flag("TESTBED_NATIVE_PROBE")


def ssh_config_file() -> Path | None:
    """`TESTBED_SSH_CONFIG`: an existing file, or None (use ~/.ssh/config)."""
    raw = _env("TESTBED_SSH_CONFIG")
    if raw is None:
        return None
    path = Path(raw).expanduser()
    if not path.is_file():
        raise InputError(None, "TESTBED_SSH_CONFIG", f"{path}: no such file")
    return path


def remote_cache_dir() -> str | None:
    """`TESTBED_REMOTE_CACHE`: an absolute path on remote lab hosts, or None."""
    raw = _env("TESTBED_REMOTE_CACHE")
    if raw is not None and not raw.startswith("/"):
        raise InputError(None, "TESTBED_REMOTE_CACHE", f"{raw!r} is not an absolute path")
    return raw


def project_root() -> Path:
    """The checkout holding images/, topologies/ and tasks/ (env `TESTBED_ROOT` overrides)."""
    raw = _env("TESTBED_ROOT")
    if raw is None:
        return Path(__file__).resolve().parent.parent
    root = Path(raw).expanduser()
    if not root.is_dir():
        raise InputError(None, "TESTBED_ROOT", f"{root} is not a directory")
    return root


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
        """The settings of this process; every setting of the module docstring is checked."""
        host_guard_enabled()
        native_probe_enabled()
        ssh_config_file()
        remote_cache_dir()
        project_root()
        return cls(
            home=testbed_home(),
            libvirt_uri=libvirt_uri(),
            memory_budget_mb=memory_budget_mb(),
            subnet_pool=subnet_pool(),
            accel=accel_override(),
        )

    @property
    def images_dir(self) -> Path:
        return self.home / "images"

    @property
    def labs_dir(self) -> Path:
        return self.home / "labs"

    @property
    def tools_dir(self) -> Path:
        """Host-built helpers (the native snapshot helper), one file per source hash."""
        return self.home / "tools"

    @property
    def leases_dir(self) -> Path:
        return self.home / "leases"

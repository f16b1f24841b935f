"""The snapshot script: where it ships, the probes it runs, the command that runs it.

``snapshot.sh`` is package data next to this module; it is uploaded to a guest and run once
as root (``sh snapshot.sh [PROBE...]``). Its output is split by
:mod:`testbed.probes.parsers.framing` and parsed by :mod:`testbed.probes.parsers`.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

SCRIPT_NAME = "snapshot.sh"

SCRIPT_PATH: Path = Path(__file__).with_name(SCRIPT_NAME)
"""Path of the snapshot script inside the installed package."""

PROBES: tuple[str, ...] = (
    "boot",
    "os",
    "tmp_files",
    "services",
    "listening",
    "processes",
    "users",
    "sudoers",
    "authorized_keys",
    "packages",
    "repos",
    "pkg_health",
    "firewall",
    "cron",
    "mounts",
    "sysctl",
    "etc_files",
    "secrets",
    "app_files",
    "network",
    "router",
)
"""Probe names in the order the script runs them (`router`: FRR's view, where vtysh exists)."""


def snapshot_script() -> str:
    """Return the text of ``snapshot.sh`` (package data shipped next to this module)."""
    try:
        return resources.files("testbed.probes").joinpath(SCRIPT_NAME).read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return SCRIPT_PATH.read_text("utf-8")


def snapshot_command(remote_path: str, probes: Iterable[str] | None = None) -> str:
    """Return the shell command that runs the uploaded script at *remote_path*.

    *probes* restricts the run to those probe names (default: all of :data:`PROBES`).
    """
    args = ["sh", remote_path, *(probes or ())]
    return " ".join(shlex.quote(a) for a in args)

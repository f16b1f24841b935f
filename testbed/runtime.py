"""Shared wiring for commands: settings, catalog, accelerator and a libvirt connection.

Kept apart from the CLI so the runner, scheduler and server build labs the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from testbed.config import Settings, project_root
from testbed.egress.hosts import mirror_hosts
from testbed.egress.hub import EgressHub, EgressSettings
from testbed.hypervisor.accel import AccelChoice, choose_accel
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.labhost import LabHost, lab_host_for
from testbed.model.images import ImageDef, load_catalog


@dataclass
class Runtime:
    """What every lab on one host is built with: settings, the image catalog, the chosen
    accelerator, the host's libvirt connection and its `LabHost` (files, SSH link)."""

    settings: Settings
    catalog: dict[str, ImageDef]
    accel: AccelChoice
    hypervisor: Hypervisor
    lab_host: LabHost
    egress: EgressHub | None = None
    """The host's egress proxy (local hosts only; Squid starts with the first lab using it)."""


def image_catalog() -> dict[str, ImageDef]:
    return load_catalog(project_root() / "images")


@asynccontextmanager
async def runtime(settings: Settings | None = None) -> AsyncIterator[Runtime]:
    """Open libvirt and pick the accelerator (cached probe); closes the connection (and a
    remote host's SSH link) after."""
    settings = settings or Settings.from_env()
    accel = await choose_accel(settings.home / "accel.json")
    async with Hypervisor(settings.libvirt_uri) as hv:
        catalog = image_catalog()
        host = lab_host_for(hv)
        hub = None if host.remote else EgressHub(EgressSettings.from_env(mirror_hosts(catalog)))
        rt = Runtime(settings, catalog, accel, hv, host, hub)
        try:
            yield rt
        finally:
            if hub is not None:
                await hub.close()
            await rt.lab_host.close()

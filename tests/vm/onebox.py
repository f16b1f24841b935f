"""One node of a given image, with a command recorder, for VM tests that exercise the harness
on a release directly (the release matrix, the check primitives): the image must already be
in the cache (a clear failure says how to build it), and the lab is torn down on exit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from testbed.db.engine import open_database
from testbed.db.recorder import RunRecorder
from testbed.hypervisor.lab import Lab, LabNode
from testbed.images.availability import availability
from testbed.images.store import ImageStore
from testbed.model.topology import NodeSpec, Topology
from testbed.runner.recording import CommandRecorder
from testbed.runtime import runtime


@asynccontextmanager
async def one_box(
    image: str, tmp_path: Path, *, memory: int, task_id: str, forward: bool = False
) -> AsyncIterator[tuple[LabNode, CommandRecorder]]:
    """A lab of one node `box` of `image` (a forwarding node with `forward`), and a recorder
    of the commands run on it."""
    async with runtime() as rt:
        state = availability(rt.catalog[image], ImageStore(rt.settings.images_dir))
        if state.state != "present":
            pytest.fail(f"{image} is {state.state} in the image cache: run `testbed image build {image}` first")
        topo = Topology(name=task_id, nodes=[NodeSpec(name="box", image=image, memory=memory, forward=forward)])
        db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
        commands = CommandRecorder(RunRecorder.create(db, task_id=task_id, agent="harness", image=image))
        async with Lab(topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel) as lab:
            yield lab.nodes["box"], commands

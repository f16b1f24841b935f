"""Warm starts: runs of one cell (task, image variant, topology) start from the cell's
saved post-setup state instead of a cold boot — for `testbed run`, `testbed launch` and the
environment API alike.

Contract of `WarmStarts.execute(request, db, listeners)`:
- A run is *eligible* when warm starts are on, the lab host is local (saved states are
  local files), the run's egress policy is `none` (a restored lab is not re-attached to the
  egress proxy) and every image of the topology is in the cache. An ineligible run runs
  cold, and `runs.config.fast_reset` says so: `{"mode": "cold", "reason": …}`.
- Eligible: the first run of a cell builds the cell's slot (lifecycle `build_state`: a
  cold boot, saved after setup), later runs restore it (lifecycle `restore`). Any number
  of runs restore from one slot at once (each is a replica with its own names, bridges and
  disks, `testbed.hypervisor.replica`): they hold the task's slot lock shared. The build
  holds it exclusively until its state is saved, then shared: runs of the cell that start
  meanwhile (a GRPO group, a job's attempts) wait for the build and restore from it, up to
  `BUILD_WAIT_S`, then run cold (reason "saved state busy"). A build of a new key waits
  likewise until the restorers of the task's old slot are done.
- A slot that fails to restore is marked broken (`SlotStore.mark_broken`: never restored
  again); the next run of the cell rebuilds it, which removes it.
- The slot key hashes the task directory, the images and the topology
  (`testbed.hypervisor.savedstate.state_key`): any change makes a new slot. For a task
  with `[parameters]` it also names the scenario (seed and drawn values,
  `testbed.model.scenario.scenario_tag`): each seed has its own slot; pass the request's
  (instantiated) task.
"""

from __future__ import annotations

import asyncio
import logging
import time

from sqlalchemy.orm import Session, sessionmaker

from testbed.hypervisor.slots import SlotStore, state_key
from testbed.images.store import ImageStore
from testbed.model.scenario import scenario_tag
from testbed.model.task import Task
from testbed.runner.events import Listener
from testbed.runner.fastreset import SavedStateUse
from testbed.runner.request import RunRequest, RunResult
from testbed.runner.run import Runner
from testbed.runtime import Runtime

log = logging.getLogger(__name__)

BUILD_WAIT_S = 1800.0
"""How long a run waits for another run's build of its cell's saved state before it runs cold."""
LOCK_POLL_S = 0.5


def cell_key(rt: Runtime, task: Task, image: str) -> str | None:
    """The slot key of (task, image) on `rt`; None when an image is not in the cache (the
    cold path then reports it as usual)."""
    store = ImageStore(rt.settings.images_dir)
    stored, defs = {}, {}
    for node in task.topology.nodes:
        name = node.image or ""
        found = store.get(name)
        if found is None or name not in rt.catalog:
            return None
        stored[node.name], defs[node.name] = found, rt.catalog[name]
    key = state_key(task.directory, stored, task.topology, variant=image, accel=rt.accel.accel, image_defs=defs)
    tag = scenario_tag(task.seed, task.values)
    return f"{key[:12]}-{tag[:7]}" if tag else key


class WarmStarts:
    """See module docstring. One per runtime (host)."""

    def __init__(self, rt: Runtime, *, enabled: bool = True, wait_s: float = BUILD_WAIT_S) -> None:
        self.rt = rt
        self.enabled = enabled
        self.wait_s = wait_s
        self.store = SlotStore(rt.settings)

    def ineligible(self, request: RunRequest) -> str | None:
        """Why `request` must run cold, or None."""
        if not self.enabled:
            return "warm starts are off (--cold)"
        if self.rt.lab_host.remote:
            return f"saved states are local files and {self.rt.hypervisor.uri} is a remote host"
        if request.egress_policy.enabled:
            return "the run has guest egress (restored labs are not attached to the proxy)"
        return None

    async def execute(
        self, request: RunRequest, db: sessionmaker[Session], listeners: list[Listener] | None = None
    ) -> RunResult:
        why = self.ineligible(request)
        key = None if why else cell_key(self.rt, request.task, request.image)
        if key is None:
            return await self._cold(request, db, listeners, why or "an image of the topology is not in the cache", None)
        task = request.task
        waited_since = time.monotonic()
        while True:
            meta = await asyncio.to_thread(self.store.load, task.id, key)
            with self.store.lock(task.id, wait=False, shared=meta is not None) as lock:
                if lock:
                    meta = await asyncio.to_thread(self.store.load, task.id, key)
                    if (meta is None) == lock.shared:
                        continue  # built or removed meanwhile: take the lock the other way
                    return await self._run(request, db, listeners, SavedStateUse(self.store, key, meta, lock=lock))
            # a build is in progress (or restorers of another state hold it): wait for it
            if time.monotonic() - waited_since > self.wait_s:
                return await self._cold(request, db, listeners, "saved state busy", key)
            await asyncio.sleep(LOCK_POLL_S)

    async def _run(
        self, request: RunRequest, db: sessionmaker[Session], listeners: list[Listener] | None, use: SavedStateUse
    ) -> RunResult:
        try:
            return await Runner(request, self.rt, db, listeners, saved=use).execute()
        finally:
            if use.slot_broken:
                log.warning("saved state %s/%s could not be restored: marking it broken", request.task.id, use.key)
                await asyncio.to_thread(self.store.mark_broken, request.task.id, use.key)

    async def _cold(
        self,
        request: RunRequest,
        db: sessionmaker[Session],
        listeners: list[Listener] | None,
        reason: str,
        key: str | None,
    ) -> RunResult:
        info: dict[str, object] = {"mode": "cold", "reason": reason}
        if key is not None:
            info["state_key"] = key
        request.config = {**request.config, "fast_reset": info}
        return await Runner(request, self.rt, db, listeners).execute()

"""The real episode backend: tasks from the checkout, runs by `testbed.runner.run.Runner`.

Fast reset (`fast_reset=True`, the default of `testbed serve`): an episode starts from the
task's saved post-setup state (`testbed.hypervisor.savedstate`, run by
the saved-state lifecycles of `testbed.runner.fastreset`). The first episode of a (task, image variant,
key) builds the slot (a cold start that is saved after setup, then continues restored); the
next ones restore it. One slot serves one episode at a time (its lab's names, addresses and
MACs are fixed): an episode that finds the task's slot busy does NOT wait — it falls back to
an ordinary cold run (recorded as `config.fast_reset.mode = "cold"`), so concurrent episodes
of one task still run, only slower. A slot that fails to restore is removed (the next episode
rebuilds it). Without fast reset, every episode is an ordinary cold run.

Saved states are local files (memory image, frozen disk), so fast reset applies only when the
libvirt URI is local; on a remote lab host every episode is a cold run (logged once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from testbed.config import Settings
from testbed.hypervisor.savedstate import SlotStore, state_key
from testbed.images.store import ImageStore
from testbed.model.task import Task, load_task
from testbed.runner.fastreset import SavedStateUse
from testbed.runner.request import RunRequest, RunResult
from testbed.runner.run import Runner
from testbed.runtime import Runtime, runtime
from testbed.server.envapi.catalog import task_catalog
from testbed.server.envapi.episodes import EpisodeManager, ExternalAgent, NotFoundError

log = logging.getLogger(__name__)


class RunnerBackend:
    """Episodes as ordinary runs on `rt`, recorded in `db`; tasks under `root/tasks`."""

    def __init__(
        self,
        rt: Runtime,
        db: sessionmaker[Session],
        root: Path,
        *,
        job_id: str | None = None,
        fast_reset: bool = False,
    ) -> None:
        self.rt = rt
        self.db = db
        self.root = root
        self.job_id = job_id
        remote = rt.lab_host.remote
        if fast_reset and remote:
            log.warning("fast reset is off: saved states are local files and %s is a remote host", rt.hypervisor.uri)
        self.fast_reset = fast_reset and not remote
        self.states = SlotStore(rt.settings)

    def load_task(self, task_id: str, image: str | None) -> Task:
        directory = self.root / "tasks" / task_id
        if not (directory / "task.toml").is_file():
            raise NotFoundError(f"no task {task_id!r}")
        return load_task(
            directory,
            images=set(self.rt.catalog),
            root=self.root,
            image=image,
            memory_budget_mb=self.rt.settings.memory_budget_mb,
        )

    async def run(self, task: Task, image: str, agent: ExternalAgent) -> RunResult:
        request = RunRequest(task, image, agent.name, job_id=self.job_id, agent_instance=agent)
        key = self.state_key(task, image) if self.fast_reset else None
        if key is None:
            return await Runner(request, self.rt, self.db).execute()
        with self.states.lock(task.id, wait=False) as held:
            if not held:
                log.info("saved state of %s is in use: cold start", task.id)
                request.config = {"fast_reset": {"mode": "cold", "state_key": key, "reason": "saved state busy"}}
                return await Runner(request, self.rt, self.db).execute()
            meta = await asyncio.to_thread(self.states.load, task.id, key)
            use = SavedStateUse(self.states, key, meta)
            try:
                return await Runner(request, self.rt, self.db, saved=use).execute()
            finally:
                if use.slot_broken:
                    log.warning("saved state %s/%s could not be restored: removing it", task.id, key)
                    await asyncio.to_thread(self.states.invalidate, task.id, None)

    def state_key(self, task: Task, image: str) -> str | None:
        """The task's slot key for `image`; None when an image is not in the cache (the cold
        path then reports it as usual)."""
        store = ImageStore(self.rt.settings.images_dir)
        stored, defs = {}, {}
        for node in task.topology.nodes:
            name = node.image or ""
            found = store.get(name)
            if found is None or name not in self.rt.catalog:
                return None
            stored[node.name], defs[node.name] = found, self.rt.catalog[name]
        return state_key(
            task.directory, stored, task.topology, variant=image, accel=self.rt.accel.accel, image_defs=defs
        )

    def database(self) -> sessionmaker[Session]:
        return self.db

    def list_tasks(self, split: str | None) -> dict[str, Any]:
        return task_catalog(self.root, lambda task_id: self.load_task(task_id, None), split)


def open_runner_manager(
    db: sessionmaker[Session],
    root: Path,
    settings: Settings | None = None,
    *,
    max_episodes: int = 4,
    idle_timeout_s: float = 900.0,
    step_timeout_s: float = 300.0,
    fast_reset: bool = False,
    fresh_states: bool = False,
) -> Callable[[], AbstractAsyncContextManager[EpisodeManager]]:
    """A factory for `create_app`: opens libvirt and yields an `EpisodeManager` over it.
    `fresh_states` removes every saved state first (waiting for episodes using them)."""

    @asynccontextmanager
    async def open_manager() -> AsyncIterator[EpisodeManager]:
        async with runtime(settings) as rt:
            if fresh_states:
                removed = await asyncio.to_thread(SlotStore(rt.settings).remove)
                log.info("removed %d saved state(s)", len(removed))
            yield EpisodeManager(
                RunnerBackend(rt, db, root, fast_reset=fast_reset),
                max_episodes=max_episodes,
                idle_timeout_s=idle_timeout_s,
                step_timeout_s=step_timeout_s,
            )

    return open_manager

"""The real episode backend: tasks from the checkout, each episode one run through
`testbed.runner.warm.WarmStarts` (fast reset).

Fast reset (`fast_reset=True`, the default of `testbed serve`): an episode starts from the
task's saved post-setup state; the rules (which runs are eligible, any number of concurrent
episodes restored from one slot, episodes that start during its build wait for it, a broken
slot is rebuilt) are `WarmStarts`' and the same as for `testbed run` and `testbed launch`.
Capacity is `--max-episodes` and the host's memory, not the number of saved states.
Without fast reset every episode is an ordinary cold run.
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
from testbed.hypervisor.slots import SlotStore
from testbed.model.task import Task
from testbed.runner.request import RunRequest, RunResult, admit_task
from testbed.runner.warm import WarmStarts, cell_key
from testbed.runtime import Runtime, runtime
from testbed.server.envapi.catalog import task_catalog
from testbed.server.envapi.episodes import EpisodeManager
from testbed.server.envapi.errors import NotFoundError
from testbed.server.envapi.external import ExternalAgent

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
        if fast_reset and rt.lab_host.remote:
            log.warning("fast reset is off: saved states are local files and %s is a remote host", rt.hypervisor.uri)
        self.warm = WarmStarts(rt, enabled=fast_reset)
        self.fast_reset = self.warm.enabled and not rt.lab_host.remote
        self.states = self.warm.store

    def load_task(self, task_id: str, image: str | None) -> Task:
        directory = self.root / "tasks" / task_id
        if not (directory / "task.toml").is_file():
            raise NotFoundError(f"no task {task_id!r}")
        return admit_task(
            directory,
            images=set(self.rt.catalog),
            root=self.root,
            image=image,
            memory_budget_mb=self.rt.settings.memory_budget_mb,
        )

    async def run(self, task: Task, image: str, agent: ExternalAgent) -> RunResult:
        request = RunRequest(task, image, agent.name, job_id=self.job_id, agent_instance=agent)
        return await self.warm.execute(request, self.db)

    def state_key(self, task: Task, image: str) -> str | None:
        """The task's slot key for `image` (see `testbed.runner.warm.cell_key`)."""
        return cell_key(self.rt, task, image)

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

"""The real episode backend: tasks from the checkout, runs by `testbed.runner.run.Runner`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from testbed.config import Settings
from testbed.model.task import Task, load_task
from testbed.runner.run import Runner, RunRequest, RunResult
from testbed.runtime import Runtime, runtime
from testbed.server.envapi.episodes import EpisodeManager, ExternalAgent, NotFoundError


class RunnerBackend:
    """Episodes as ordinary runs on `rt`, recorded in `db`; tasks under `root/tasks`."""

    def __init__(self, rt: Runtime, db: sessionmaker[Session], root: Path, *, job_id: str | None = None) -> None:
        self.rt = rt
        self.db = db
        self.root = root
        self.job_id = job_id

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
        return await Runner(request, self.rt, self.db).execute()

    def database(self) -> sessionmaker[Session]:
        return self.db


def open_runner_manager(
    db: sessionmaker[Session],
    root: Path,
    settings: Settings | None = None,
    *,
    max_episodes: int = 4,
    idle_timeout_s: float = 900.0,
    step_timeout_s: float = 300.0,
) -> Callable[[], AbstractAsyncContextManager[EpisodeManager]]:
    """A factory for `create_app`: opens libvirt and yields an `EpisodeManager` over it."""

    @asynccontextmanager
    async def open_manager() -> AsyncIterator[EpisodeManager]:
        async with runtime(settings) as rt:
            yield EpisodeManager(
                RunnerBackend(rt, db, root),
                max_episodes=max_episodes,
                idle_timeout_s=idle_timeout_s,
                step_timeout_s=step_timeout_s,
            )

    return open_manager

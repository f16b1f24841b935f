"""One run: a task executed by an agent on a lab, recorded in full, verified.

`Runner(request, runtime, db, listeners).execute()` creates (or attaches to) the run row,
builds the run's context and executes one lifecycle (`testbed.runner.lifecycle`): `cold`
by default, or the build/restore lifecycles of a saved state (`saved=SavedStateUse`).

Contracts:
- Input is validated before anything is created: a bad task or agent raises `InputError`
  and leaves no run row and no libvirt object.
- The run row's `state` and its phase rows follow the lifecycle as it goes; listeners get
  the same as typed events (`testbed.runner.events`).
- Outcome: `passed`/`failed` from the checks (`error` when a check is indeterminate and
  none failed); `error` for any harness failure (provisioning, a setup step that fails, a
  lost guest, libvirt or SSH faults); `cancelled` when the run's task is cancelled. Harness
  errors are never reported as `failed`.
- The lab is torn down however the run ends; `finish` is always recorded.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import AgentBinding
from testbed.analysis.redact import Redactor
from testbed.db.recorder import RunRecorder
from testbed.hypervisor.owner import Owner
from testbed.model.task_record import TASK_KEY, task_record
from testbed.runner.context import RunContext
from testbed.runner.events import Listener, RunStarted
from testbed.runner.fastreset import SavedStateUse
from testbed.runner.lifecycle import Lifecycle, cold, execute
from testbed.runner.recording import CommandRecorder
from testbed.runner.request import RunRequest, RunResult, agent_context
from testbed.runner.steps import LabFactory, cold_lab
from testbed.runtime import Runtime


class Runner:
    """Executes one `RunRequest` on `runtime`, recording into `db`."""

    def __init__(
        self,
        request: RunRequest,
        runtime: Runtime,
        db: sessionmaker[Session],
        listeners: list[Listener] | None = None,
        *,
        saved: SavedStateUse | None = None,
        make_lab: LabFactory = cold_lab,
    ) -> None:
        self.request = request.validated()
        self.rt = runtime
        self.db = db
        self.listeners = list(listeners or [])
        self.saved = saved
        self.make_lab = make_lab

    def lifecycle(self) -> Lifecycle:
        return self.saved.lifecycle() if self.saved is not None else cold(self.make_lab)

    async def execute(self) -> RunResult:
        request = self.request
        assert request.agent_instance is not None and request.policy is not None
        config = {
            "owner": Owner.current().to_dict(),  # `testbed reap` finishes the row if this process dies
            "accel": self.rt.accel.label,
            "limits": request.task.definition.limits.model_dump(),
            TASK_KEY: await asyncio.to_thread(task_record, request.task),  # the task page and its diffs
            **request.config,
            **(self.saved.config() if self.saved is not None else {}),
        }
        recorder = await asyncio.to_thread(self._recorder, config)
        ctx = RunContext(
            request=request,
            runtime=self.rt,
            db=self.db,
            recorder=recorder,
            commands=CommandRecorder(recorder, redact_output=request.redact),
            agent=request.agent_instance,
            agent_context=agent_context(request.task),
            policy=request.policy,
            listeners=self.listeners,
        )
        ctx.emit(RunStarted(recorder.run_id))
        request.agent_instance.bind(AgentBinding(recorder, ctx.commands))
        try:
            return await execute(ctx, self.lifecycle())
        finally:
            if self.saved is not None:
                self.saved.timings.update(ctx.timings)
                self.saved.note_restore_failure()

    def _recorder(self, config: dict[str, Any]) -> RunRecorder:
        """The run's recorder: a new row, or the existing pending row `request.run_id`
        (created by the scheduler)."""
        request, task = self.request, self.request.task
        host = f"{socket.gethostname()} {self.rt.settings.libvirt_uri}"
        redactor = Redactor() if request.redact else None
        if request.run_id is not None:
            recorder = RunRecorder(self.db, request.run_id, redactor=redactor)
            recorder.update_run(host=host, config=config)
            return recorder
        assert request.agent_instance is not None
        return RunRecorder.create(
            self.db,
            task_id=task.id,
            agent=request.agent_instance.name,
            variant=request.image,
            image=request.image,
            attempt=request.attempt,
            job_id=request.job_id,
            host=host,
            task_category=task.definition.category,
            config=config,
            redactor=redactor,
        )

"""One run: a task executed by an agent on a fresh lab, recorded in full, verified.

Lifecycle (DESIGN.md): pending → provisioning → snapshot(before_setup) → setup →
snapshot(after_setup) → agent → snapshot(after_agent) → verify → [reboot →
snapshot(after_reboot) → verify again] → teardown → finished.

Contracts:
- Input is validated before anything is created: a bad task or agent raises `InputError`
  and leaves no run row and no libvirt object.
- The run row's `state` and its phase rows follow the lifecycle as it goes.
- Outcome: `passed`/`failed` from the checks (`error` when a check is indeterminate and
  none failed); `error` for any harness failure (provisioning, a setup step that fails, a
  lost guest, libvirt or SSH faults); `cancelled` when the run's task is cancelled. Harness
  errors are never reported as `failed`.
- The lab is torn down however the run ends; `finish` is always recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import Agent, AgentContext
from testbed.agents.scripted import check_agent_nodes, make_agent
from testbed.analysis import SafetyPolicy
from testbed.analysis.findings_cli import load_residue_inputs
from testbed.analysis.residue import find_residue, record_residue
from testbed.db.recorder import RunRecorder
from testbed.errors import HarnessError
from testbed.hypervisor.lab import Lab, LabNode
from testbed.model.task import Step, Task
from testbed.runner.reboot import reboot_node
from testbed.runner.recording import CommandRecorder
from testbed.runner.session import AgentSession, SessionStats
from testbed.runner.snapshots import snapshot_all
from testbed.runner.verify import CheckResult, outcome_of, verify
from testbed.runtime import Runtime

ProgressFn = Callable[[str, str], None]


class RunLab(Protocol):
    """What a run needs of its lab: `Lab`, or a lab restored from a saved state."""

    nodes: dict[str, LabNode]

    async def up(self) -> None: ...

    async def down(self) -> None: ...


@dataclass
class RunRequest:
    task: Task
    image: str
    agent: str
    attempt: int = 1
    job_id: str | None = None
    redact: bool = True
    agent_instance: Agent | None = None  # overrides `agent` (LLM agents, tests)
    policy: SafetyPolicy | None = None
    run_id: str | None = None  # an existing pending run row (created by the scheduler) to execute
    boot_gate: asyncio.Semaphore | None = None  # passed to the Lab: caps/staggers guest boots (scheduler)

    def validated(self) -> RunRequest:
        """Build the agent and the safety policy now, so bad input fails (as `InputError`)
        before any run row or libvirt object exists. Idempotent."""
        if self.agent_instance is None:
            self.agent_instance = make_agent(self.agent, self.task)
        check_agent_nodes(self.agent_instance, agent_context(self.task))
        if self.policy is None:
            self.policy = SafetyPolicy.from_table(self.task.definition.safety, self.task.directory / "task.toml")
        return self


@dataclass
class RunResult:
    run_id: str
    outcome: str
    error: str | None = None
    checks: list[CheckResult] = field(default_factory=list)
    stats: SessionStats | None = None


def agent_context(task: Task) -> AgentContext:
    limits = task.definition.limits
    return AgentContext(
        task_id=task.id,
        instruction=task.instruction,
        nodes=[n.name for n in task.topology.nodes],
        max_commands=limits.max_commands,
        agent_time_s=limits.agent_time_s,
        command_time_s=limits.command_time_s,
    )


class Runner:
    """Executes one `RunRequest` on `runtime`, recording into `db`."""

    def __init__(
        self, request: RunRequest, runtime: Runtime, db: sessionmaker[Session], progress: ProgressFn | None = None
    ) -> None:
        self.request = request
        self.rt = runtime
        self.db = db
        self.progress = progress or (lambda _phase, _detail: None)
        request.validated()
        assert request.agent_instance is not None and request.policy is not None
        self.context = agent_context(request.task)
        self.agent: Agent = request.agent_instance
        self.policy: SafetyPolicy = request.policy
        self.recorder: RunRecorder | None = None
        self.current_phase = "provisioning"
        self.extra_config: dict[str, Any] = {}  # merged into the run row's `config` (subclasses)

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def _phase(self, name: str, state: str | None = None) -> None:
        assert self.recorder is not None
        if state:
            await self._call(self.recorder.set_state, state)
        await self._call(self.recorder.phase_started, name)
        self.current_phase = name
        self.progress(name, "started")

    async def _end_phase(self, name: str, status: str = "ok", detail: str | None = None) -> None:
        assert self.recorder is not None
        await self._call(self.recorder.phase_finished, name, status, detail)
        self.progress(name, status)

    async def execute(self) -> RunResult:
        task = self.request.task
        host = f"{socket.gethostname()} {self.rt.settings.libvirt_uri}"
        config = {"accel": self.rt.accel.label, "limits": task.definition.limits.model_dump(), **self.extra_config}
        if self.request.run_id is not None:
            self.recorder = recorder = await self._call(self._attach, self.request.run_id, host, config)
        else:
            self.recorder = recorder = await self._call(
                RunRecorder.create,
                self.db,
                task_id=task.id,
                agent=self.agent.name,
                variant=self.request.image,
                image=self.request.image,
                attempt=self.request.attempt,
                job_id=self.request.job_id,
                host=host,
                task_category=task.definition.category,
                config=config,
            )
        self.progress("run", recorder.run_id)
        bind = getattr(self.agent, "bind_recorder", None)  # agents that store rows of their own (LLM turns)
        if callable(bind):
            bind(recorder)
        result = RunResult(recorder.run_id, "error")
        commands = CommandRecorder(recorder, redact_output=self.request.redact)
        lab = self._make_lab(recorder.run_id)
        try:
            await self._phase("provisioning", "provisioning")
            try:
                await lab.up()
            finally:
                for node in lab.nodes.values():
                    await self._call(
                        recorder.add_node,
                        node.name,
                        image=node.image.name,
                        domain_name=node.domain,
                        mgmt_ip=node.mgmt_ip,
                    )
            await self._end_phase("provisioning")
            await self._run_phases(lab, commands, result)
        except HarnessError as exc:
            result.outcome, result.error = "error", f"{self.current_phase}: {exc}"
            await self._end_phase_safely(self.current_phase, "error", str(exc))
        except Exception as exc:  # noqa: BLE001 - any other fault is still the harness's, never the agent's
            trace = traceback.format_exc(limit=8)
            result.outcome, result.error = "error", f"{self.current_phase}: internal error: {type(exc).__name__}: {exc}"
            await self._end_phase_safely(self.current_phase, "error", trace)
        except asyncio.CancelledError:
            result.outcome, result.error = "cancelled", "cancelled"
            await self._end_phase_safely(self.current_phase, "cancelled", None)
            await asyncio.shield(self._teardown(lab))
            await asyncio.shield(self._call(recorder.finish, "cancelled", "cancelled", 0.0))
            raise
        await self._teardown(lab)
        await self._call(recorder.finish, result.outcome, result.error, 1.0 if result.outcome == "passed" else 0.0)
        self.progress("finished", result.outcome)
        return result

    def _make_lab(self, run_id: str) -> RunLab:
        """The run's lab (not yet up). Subclasses may return another object with `up()`,
        `down()` and `nodes` (fast reset: a lab restored from a saved state)."""
        return Lab(
            self.request.task.topology,
            self.rt.catalog,
            settings=self.rt.settings,
            hypervisor=self.rt.hypervisor,
            accel=self.rt.accel.accel,
            run_id=run_id,
            job_id=self.request.job_id,
            progress=lambda who, what: self.progress("provisioning", f"{who}: {what}"),
            boot_gate=self.request.boot_gate,
            lab_host=self.rt.lab_host,
        )

    def _attach(self, run_id: str, host: str, config: dict[str, Any]) -> RunRecorder:
        """Attach to the existing pending run row `run_id` (created by the scheduler)."""
        recorder = RunRecorder(self.db, run_id)
        recorder.update_run(host=host, config=config)
        return recorder

    async def _end_phase_safely(self, name: str, status: str, detail: str | None) -> None:
        with contextlib.suppress(LookupError, ValueError):
            await asyncio.shield(self._end_phase(name, status, detail))

    async def _teardown(self, lab: RunLab) -> None:
        assert self.recorder is not None
        await self._phase("teardown", "teardown")
        try:
            await lab.down()
            await self._end_phase("teardown")
        except HarnessError as exc:
            await self._end_phase("teardown", "error", str(exc))

    async def _run_phases(self, lab: RunLab, commands: CommandRecorder, result: RunResult) -> None:
        assert self.recorder is not None
        task = self.request.task
        nodes = list(lab.nodes.values())
        await self._prepare(lab, commands)
        await self._phase("agent", "agent")
        session = AgentSession(lab.nodes, commands, self.context, self.policy)
        result.stats = await session.drive(self.agent)
        await self._end_phase("agent", "ok", f"{result.stats.commands} commands; ended by {result.stats.ended_by}")
        await self._snapshot(nodes, commands, "after_agent", state="verify")
        await self._phase("verify")
        result.checks = await verify(task.definition.checks, lab.nodes, commands, "after_agent")
        await self._end_phase("verify")
        persist = [c for c in task.definition.checks if c.persist]
        # The reboot only matters while the run can still pass: once a check has failed the
        # outcome is `failed` whatever the reboot shows, so it is skipped (and recorded so).
        already_failed = any(r.status == "failed" for r in result.checks)
        if persist and already_failed:
            await self._phase("reboot")
            await self._end_phase("reboot", "skipped", "a check already failed after the agent")
        elif persist:
            await self._phase("reboot", "reboot")
            await asyncio.gather(*(reboot_node(n) for n in nodes))
            await self._end_phase("reboot")
            await self._snapshot(nodes, commands, "after_reboot")
            await self._phase("verify_after_reboot")
            result.checks += await verify(persist, lab.nodes, commands, "after_reboot")
            await self._end_phase("verify_after_reboot")
        result.outcome, result.error = outcome_of(result.checks)
        await self._residue()

    async def _prepare(self, lab: RunLab, commands: CommandRecorder) -> None:
        """Everything before the agent: snapshot(before_setup) → setup → snapshot(after_setup)."""
        nodes = list(lab.nodes.values())
        await self._snapshot(nodes, commands, "before_setup", state="setup")
        await self._phase("setup")
        await self._setup(lab.nodes, commands)
        await self._end_phase("setup")
        await self._snapshot(nodes, commands, "after_setup")

    async def _residue(self) -> None:
        """Residue findings from the recorded snapshots and commands. An analysis failure is
        recorded on the phase and leaves the verdict `undetermined`; it never changes the
        run's outcome."""
        assert self.recorder is not None
        recorder, run_id = self.recorder, self.recorder.run_id
        expected = self.request.task.definition.expected

        def analyse() -> str:
            with self.db() as session:
                snapshots, commands = load_residue_inputs(session, run_id)
            found = find_residue(snapshots, commands, expected)
            record_residue(recorder, found)
            return f"{found.verdict}: {len(found.findings)} finding(s)"

        await self._phase("residue")
        try:
            summary = await asyncio.to_thread(analyse)
        except Exception as exc:  # noqa: BLE001 - analysis must not turn into a harness error
            await self._call(recorder.set_residue, "undetermined")
            await self._end_phase("residue", "error", f"{type(exc).__name__}: {exc}")
            return
        await self._end_phase("residue", "ok", summary)

    async def _snapshot(
        self, nodes: list[LabNode], commands: CommandRecorder, point: str, state: str | None = None
    ) -> None:
        assert self.recorder is not None
        name = f"snapshot_{point}"
        await self._phase(name, state)
        data = await snapshot_all(nodes, commands, point)
        if point == "before_setup":
            for node, snap in data.items():
                os_info = snap.get("os") or {}
                release = os_info.get("pretty_name") if isinstance(os_info, dict) else None
                if release:
                    await self._call(self.recorder.update_node, node, os_release=str(release))
        await self._end_phase(name)

    async def _setup(self, nodes: dict[str, LabNode], commands: CommandRecorder) -> None:
        """Stages in order; the steps of one stage in parallel. A failing step is a harness error."""
        task = self.request.task
        steps = sorted(task.definition.setup, key=lambda s: s.stage)
        for stage, group in itertools.groupby(steps, key=lambda s: s.stage):
            members = list(group)
            self.progress("setup", f"stage {stage}: {len(members)} step(s)")
            await asyncio.gather(*(self._setup_step(s, nodes, commands) for s in members))

    async def _setup_step(self, step: Step, nodes: dict[str, LabNode], commands: CommandRecorder) -> None:
        text = self.request.task.step_command(step)
        recorded = await commands.run(nodes[step.node], text, phase="setup", source="harness", timeout=step.timeout_s)
        if not recorded.result.ok:
            label = step.id or step.script or step.command
            why = "timed out" if recorded.result.timed_out else f"exited {recorded.result.exit_code}"
            tail = recorded.result.stderr.strip()[-500:]
            raise HarnessError(f"setup step '{label}' on {step.node} {why}: {tail}")

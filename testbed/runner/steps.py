"""The steps of a run's lifecycle, one small class each (vagrant-libvirt's middleware).

Contract: a step has one job and one method, `run(ctx)`. It opens its own phase(s) through
`ctx.phase`, works on the lab and the journal in `ctx`, and raises `HarnessError` for a
harness fault; it never decides the run's outcome except where that is its job
(`Conclude`). Lists of steps make the lifecycles (`testbed.runner.lifecycle`); teardown is
not a step of the list, it is the lifecycle's `finally`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from testbed.analysis.residue import find_residue, record_residue
from testbed.egress.guestconf import guest_proxy_commands
from testbed.egress.lab import lab_egress_spec, lab_no_proxy
from testbed.errors import HarnessError
from testbed.hypervisor.lab import Lab, LabNode
from testbed.hypervisor.removal import KeepConsole
from testbed.model.task import Step as SetupStep
from testbed.model.vocab import Outcome, Phase, PhaseStatus, Residue, RunState, SnapshotPoint
from testbed.runner.context import RunContext, RunLab
from testbed.runner.events import ProvisionProgress
from testbed.runner.lockout import AccessLoss, diagnose
from testbed.runner.reboot import reboot_node
from testbed.runner.session import AgentSession
from testbed.runner.snapshots import snapshot_all
from testbed.runner.unchanged import unchanged_judge
from testbed.runner.verify import outcome_of, verify


class Step(Protocol):
    async def run(self, ctx: RunContext) -> None: ...


LabFactory = Callable[[RunContext], RunLab]
"""Makes the run's lab (not yet up) for a context."""


def cold_lab(ctx: RunContext) -> RunLab:
    """A fresh `Lab` of the task's topology on the context's host."""
    rt, request = ctx.runtime, ctx.request
    return Lab(
        request.task.topology,
        rt.catalog,
        settings=rt.settings,
        hypervisor=rt.hypervisor,
        accel=rt.accel.accel,
        run_id=ctx.run_id,
        job_id=request.job_id,
        progress=lambda who, what: ctx.emit(ProvisionProgress(ctx.run_id, who, what)),
        boot_gate=request.boot_gate,
        lab_host=rt.lab_host,
        keep_console=console_keeper(ctx),
    )


CONSOLE_LIMIT = 1024 * 1024
"""The most of a console log kept with a run (its tail)."""


def console_keeper(ctx: RunContext) -> KeepConsole:
    """A lab's `keep_console` hook that stores each node's console log (redacted) as an
    artifact of the run, so it outlives the lab directory."""

    async def keep(node: str, path: Path) -> None:
        data = await asyncio.to_thread(path.read_bytes)
        text = data[-2 * CONSOLE_LIMIT :].decode(errors="replace")  # the recorder redacts it
        name = f"console-{node}.log"
        await ctx.call(ctx.recorder.record_artifact, name, "console", text, node=node, limit=CONSOLE_LIMIT)

    return keep


@dataclass(frozen=True)
class Provision:
    """Bring the lab up; every node that got a domain is recorded, even on failure."""

    make_lab: LabFactory = cold_lab

    async def run(self, ctx: RunContext) -> None:
        async with ctx.phase(Phase.PROVISIONING, RunState.PROVISIONING):
            lab = ctx.lab = self.make_lab(ctx)
            try:
                await lab.up()
            finally:
                for node in lab.nodes.values():
                    await ctx.call(
                        ctx.recorder.add_node,
                        node.name,
                        image=node.image.name,
                        domain_name=node.domain,
                        mgmt_ip=node.mgmt_ip,
                    )


async def note_lockout(ctx: RunContext, loss: AccessLoss) -> None:
    """Remember that the agent cut the harness off `loss.node`: later steps reach it through
    the guest agent when that answers, else not at all; the evidence goes on the run row."""
    if loss.node in ctx.lockouts:
        return
    ctx.lockouts[loss.node] = loss
    ctx.nodes[loss.node].access = "oob" if loss.oob_usable else "none"
    await ctx.call(ctx.recorder.merge_config, "lockout", {loss.node: loss.to_json()})


async def regain_access(ctx: RunContext, node: LabNode, fault: HarnessError) -> None:
    """A harness command on `node` failed in transport after the agent phase: find out
    why. Returns when the caller may try again (SSH came back, or the guest agent now
    carries the node's commands) or should skip the node (`node.access == "none"`); a
    fault outside the guest re-raises `fault`."""
    if node.access != "ssh":
        raise fault  # already on the out-of-band channel: nothing else to fall back to
    loss = await diagnose(node, fault)
    if loss.agent_caused:
        await note_lockout(ctx, loss)
    elif not loss.recovered:
        raise fault


@dataclass(frozen=True)
class Egress:
    """Attach the lab to the host's egress proxy and point its guests at it (recorded
    harness commands of the setup phase), when the run's policy is not `none`. The
    attachment is held until teardown, which leaves the proxy before the lab goes and
    stores every request the guests made (`egress` rows)."""

    async def run(self, ctx: RunContext) -> None:
        policy = ctx.request.egress_policy
        if not policy.enabled:
            return
        hub, lab = ctx.runtime.egress, ctx.lab
        if hub is None:
            raise HarnessError(f"egress {policy.mode!r} needs a local lab host (the egress proxy runs beside libvirt)")
        if not isinstance(lab, Lab):
            raise HarnessError("egress is available on freshly provisioned labs only (not on restored saved states)")
        async with ctx.phase(Phase.EGRESS) as phase:
            ctx.egress = await ctx.resources.enter_async_context(hub.lab(lab_egress_spec(lab, policy)))
            no_proxy = lab_no_proxy(lab)
            for node in ctx.nodes.values():
                for command in guest_proxy_commands(ctx.egress.proxy_url, node.image.dialect, no_proxy):
                    done = await ctx.commands.run(node, command, phase="setup", source="harness", timeout=60)
                    if not done.result.ok:
                        raise HarnessError(f"egress: configuring {node.name} failed: {done.result.stderr.strip()}")
            phase.close_as(PhaseStatus.OK, f"egress {policy.mode} through {ctx.egress.proxy_url}")


async def leave_egress(ctx: RunContext) -> None:
    """Close what the steps held (the egress attachment first), then store the requests
    the guests made through the proxy."""
    await ctx.resources.aclose()
    if ctx.egress is not None:
        records = await asyncio.to_thread(ctx.egress.records)
        await ctx.call(ctx.recorder.record_egress, records)
        ctx.egress = None


@dataclass(frozen=True)
class Snapshot:
    """Snapshot every node at `point` (the first one also records each node's OS). After
    the agent, a node the agent cut off is snapshotted through its guest agent, or skipped
    (and the phase says so) when nothing answers."""

    point: SnapshotPoint
    state: RunState | None = None

    async def run(self, ctx: RunContext) -> None:
        async with ctx.phase(Phase.snapshot(self.point), self.state) as phase:
            if self.point in (SnapshotPoint.BEFORE_SETUP, SnapshotPoint.AFTER_SETUP):
                data = await snapshot_all(list(ctx.nodes.values()), ctx.commands, self.point)
            else:
                data = await self._after_agent(ctx)
                skipped = sorted(set(ctx.nodes) - set(data))
                if skipped:
                    phase.close_as(PhaseStatus.OK, f"not taken on {', '.join(skipped)}: no channel answers")
            if self.point != SnapshotPoint.BEFORE_SETUP:
                return
            for node, snap in data.items():
                os_info = snap.get("os") or {}
                release = os_info.get("pretty_name") if isinstance(os_info, dict) else None
                if release:
                    ctx.journal.os_release[node] = str(release)
                    await ctx.call(ctx.recorder.update_node, node, os_release=str(release))

    async def _after_agent(self, ctx: RunContext) -> dict[str, dict[str, Any]]:
        async def one(node: LabNode) -> dict[str, Any] | None:
            for _attempt in (1, 2):
                if node.access == "none":
                    return None
                try:
                    return (await snapshot_all([node], ctx.commands, self.point))[node.name]
                except HarnessError as exc:
                    await regain_access(ctx, node, exc)
            return None

        nodes = list(ctx.nodes.values())
        results = await asyncio.gather(*(one(n) for n in nodes))
        return {n.name: r for n, r in zip(nodes, results, strict=True) if r is not None}


@dataclass(frozen=True)
class Setup:
    """The task's setup steps: stages in order, the steps of one stage in parallel. A
    failing step is a harness error (the starting condition could not be made)."""

    async def run(self, ctx: RunContext) -> None:
        async with ctx.phase(Phase.SETUP):
            steps = sorted(ctx.request.task.definition.setup, key=lambda s: s.stage)
            for stage, group in itertools.groupby(steps, key=lambda s: s.stage):
                members = list(group)
                ctx.emit(ProvisionProgress(ctx.run_id, "setup", f"stage {stage}: {len(members)} step(s)"))
                await asyncio.gather(*(self._one(ctx, s) for s in members))

    @staticmethod
    async def _one(ctx: RunContext, step: SetupStep) -> None:
        text = ctx.request.task.step_command(step)
        node = ctx.nodes[step.node]
        recorded = await ctx.commands.run(node, text, phase="setup", source="harness", timeout=step.timeout_s)
        if not recorded.result.ok:
            label = step.id or step.script or step.command
            why = "timed out" if recorded.result.timed_out else f"exited {recorded.result.exit_code}"
            tail = recorded.result.stderr.strip()[-500:]
            raise HarnessError(f"setup step '{label}' on {step.node} {why}: {tail}")


@dataclass(frozen=True)
class AgentPhase:
    """The agent works, through `AgentSession` (limits, safety policy, recording)."""

    async def run(self, ctx: RunContext) -> None:
        async with ctx.phase(Phase.AGENT, RunState.AGENT) as phase:
            session = AgentSession(ctx.nodes, ctx.commands, ctx.agent_context, ctx.policy)
            stats = ctx.result.stats = await session.drive(ctx.agent)
            detail = f"{stats.commands} commands; ended by {stats.ended_by}"
            if stats.lockout is not None:
                await note_lockout(ctx, stats.lockout)
                detail += f": {stats.lockout.reason}"
            phase.close_as(PhaseStatus.OK, detail)


@dataclass(frozen=True)
class AccessCheck:
    """After the agent, every node must still accept a NEW harness connection: an agent can
    keep its own session alive while it breaks sshd, stops it, or isolates the guest into
    rescue mode, and the machine is then just as unmanageable. A node whose fresh SSH
    connection fails is diagnosed like any lost connection (`testbed.runner.lockout`)."""

    async def run(self, ctx: RunContext) -> None:
        for node in ctx.nodes.values():
            if node.access != "ssh" or node.name in ctx.lockouts:
                continue
            await node.session.close()
            try:
                await node.session.connect()
            except HarnessError as exc:
                await regain_access(ctx, node, exc)


@dataclass(frozen=True)
class Verify:
    """Every check of the task against the machines as the agent left them."""

    async def run(self, ctx: RunContext) -> None:
        async with ctx.phase(Phase.VERIFY):
            checks = ctx.request.task.definition.checks
            point = SnapshotPoint.AFTER_AGENT
            ctx.result.checks = await verify(
                checks,
                ctx.nodes,
                ctx.commands,
                point,
                on_lost=lambda n, e: regain_access(ctx, n, e),
                unchanged=unchanged_judge(ctx.journal, ctx.request.task.definition.expected),
            )


@dataclass(frozen=True)
class PersistenceCheck:
    """For tasks with `persist` checks: reboot every node, snapshot, verify those again.
    Skipped (and recorded so) once a check has failed: the outcome is `failed` whatever
    the reboot would show."""

    async def run(self, ctx: RunContext) -> None:
        persist = [c for c in ctx.request.task.definition.checks if c.persist]
        if not persist:
            return
        why = "a check already failed after the agent" if any(r.status == "failed" for r in ctx.result.checks) else None
        if ctx.lockouts:
            why = "the agent cut management access: the run has failed"
        if why is not None:
            async with ctx.phase(Phase.REBOOT) as phase:
                phase.close_as(PhaseStatus.SKIPPED, why)
            return
        nodes = list(ctx.nodes.values())
        async with ctx.phase(Phase.REBOOT, RunState.REBOOT):
            await asyncio.gather(*(reboot_node(n, ctx.commands) for n in nodes))
        await Snapshot(SnapshotPoint.AFTER_REBOOT).run(ctx)
        async with ctx.phase(Phase.VERIFY_AFTER_REBOOT):
            ctx.result.checks += await verify(persist, ctx.nodes, ctx.commands, SnapshotPoint.AFTER_REBOOT)


@dataclass(frozen=True)
class Conclude:
    """The outcome from the checks: `passed`, `failed`, or `error` when some check could
    not be decided and none failed; `failed` with the reason whatever the checks say when
    the agent failed by itself (`AgentFailure`) or cut the harness off a node (the first
    lockout's reason, "agent cut management access: …")."""

    async def run(self, ctx: RunContext) -> None:
        ctx.result.outcome, ctx.result.error = outcome_of(ctx.result.checks)
        stats = ctx.result.stats
        if ctx.lockouts:
            first = next(iter(ctx.lockouts.values()))
            ctx.result.outcome, ctx.result.error = Outcome.FAILED, first.reason
        elif stats is not None and stats.failure is not None:
            ctx.result.outcome, ctx.result.error = Outcome.FAILED, f"agent failed: {stats.failure}"


@dataclass(frozen=True)
class ResidueStep:
    """Residue findings from the journal's snapshots and commands. An analysis failure is
    recorded on the phase and leaves the verdict `undetermined`; it never changes the
    run's outcome."""

    async def run(self, ctx: RunContext) -> None:
        expected = ctx.request.task.definition.expected
        snapshots, commands = ctx.journal.snapshots, ctx.journal.command_views()

        def analyse() -> str:
            found = find_residue(snapshots, commands, expected)
            record_residue(ctx.recorder, found)
            return f"{found.verdict}: {len(found.findings)} finding(s)"

        async with ctx.phase(Phase.RESIDUE) as phase:
            try:
                summary = await asyncio.to_thread(analyse)
            except Exception as exc:  # noqa: BLE001 - analysis must not turn into a harness error
                await ctx.call(ctx.recorder.set_residue, Residue.UNDETERMINED)
                phase.close_as(PhaseStatus.ERROR, f"{type(exc).__name__}: {exc}")
                return
            phase.close_as(PhaseStatus.OK, summary)


async def teardown(ctx: RunContext) -> None:
    """Tear the lab down (when one was made); a failure is recorded on the phase."""
    errors: list[str] = []
    try:
        await leave_egress(ctx)  # the listener holds the bridge address: leave before the lab goes
    except Exception as exc:  # noqa: BLE001 - recorded on the phase; the lab must still go
        errors.append(f"egress: {type(exc).__name__}: {exc}")
    if ctx.lab is None:
        return
    async with ctx.phase(Phase.TEARDOWN, RunState.TEARDOWN) as phase:
        if errors:
            phase.close_as(PhaseStatus.ERROR, "; ".join(errors))
        try:
            await ctx.lab.down()
        except HarnessError as exc:
            phase.close_as(PhaseStatus.ERROR, str(exc))

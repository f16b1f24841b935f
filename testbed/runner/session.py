"""The agent phase's gatekeeper: every agent action goes through `AgentSession.step`.

Contracts:
- The session enforces the command count limit, the agent time limit (a command's timeout
  is never longer than the time left), and the task's safety policy: a blocked command is
  never sent to the guest; the agent gets a refusal and a `safety` finding is recorded.
  Flagged commands run and are recorded as `safety` findings too.
- Every agent command gets a row (run, refused or failed in transport) and its high-impact
  classes become `impact` findings.
- A transport failure (SSH lost, guest gone) is diagnosed (`testbed.runner.lockout`): a
  transient drop is reported to the agent and the session goes on; a lockout the agent
  caused (it cut SSH, powered the guest off, panicked it…) ends the session with
  `ended_by = "lockout"` and the diagnosis in `lockout`; anything else (the guest destroyed
  from outside, libvirt gone) propagates as a harness error. A timed-out agent command is
  followed by one harness `true` to find out whether the agent cut the harness off.
- An `AgentFailure` from the agent (its model overflowed its context, refused, kept sending
  malformed tool calls) ends the session with `ended_by = "agent_failure"` and the reason
  in `failure`; the run goes on to verification and ends `failed` with that reason.
The same session serves scripted agents (driven by `drive`) and the HTTP environment
(which calls `step` directly).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from testbed.agents.base import Action, Agent, AgentContext, Observation
from testbed.analysis import SafetyDecision, SafetyPolicy, analyze
from testbed.errors import AgentFailure, HarnessError
from testbed.hypervisor.lab import LabNode
from testbed.model.vocab import Source
from testbed.runner.lockout import AccessLoss, AccessLost, diagnose
from testbed.runner.recording import CommandRecorder


@dataclass
class SessionStats:
    commands: int = 0
    blocked: int = 0
    timed_out: int = 0
    ended_by: str = "agent"  # agent | time_limit | command_limit | agent_failure | lockout
    failure: str | None = None  # the agent's own failure (`AgentFailure`), when it ended so
    lockout: AccessLoss | None = None  # the agent cut the harness off a node (`AccessLost`)


class AgentSession:
    def __init__(
        self, nodes: dict[str, LabNode], commands: CommandRecorder, context: AgentContext, policy: SafetyPolicy
    ) -> None:
        self.nodes = nodes
        self.commands = commands
        self.context = context
        self.policy = policy
        self.stats = SessionStats()
        self.deadline = time.monotonic() + context.agent_time_s

    @property
    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def exhausted(self) -> str | None:
        """Why no further command may run, or None."""
        if self.remaining_s <= 0:
            return "time_limit"
        if self.stats.commands >= self.context.max_commands:
            return "command_limit"
        return None

    async def step(self, action: Action) -> Observation:
        """Run one agent command (or refuse it: limits reached, unknown node, blocked by the
        safety policy); every command is recorded, and its findings with it."""
        reason = self.exhausted
        if reason is not None:
            return Observation(action.node, action.command, "", "", None, message=f"refused: {reason} reached")
        self.stats.commands += 1
        impact = sorted({h.impact_class for h in analyze(action.command)})
        node = self.nodes.get(action.node)
        if node is None:
            return await self._unknown_node(action, impact)
        decision = self.policy.evaluate(action.command)
        if decision.blocked:
            return await self._blocked(node, action, decision, impact)
        timeout = max(1.0, min(self.context.command_time_s, self.remaining_s))
        try:
            recorded = await self.commands.run(
                node.as_source(Source.AGENT),  # the agent's own login where it has one (a router's CLI)
                action.command,
                phase="agent",
                source="agent",
                timeout=timeout,
                idle_timeout=self.context.command_idle_s,
            )
        except HarnessError as exc:
            return await self._transport_failure(node, action, exc)
        result = recorded.result
        if result.timed_out:
            self.stats.timed_out += 1
            await self._still_reachable(node)
        await self._command_findings(node, action, decision, recorded.command_id, recorded.impact)
        return Observation(
            node.name,
            action.command,
            result.stdout,
            result.stderr,
            result.exit_code,
            timed_out=result.timed_out,
            duration_ms=result.duration_ms,
            message="timed out" if result.timed_out else None,
        )

    async def _unknown_node(self, action: Action, impact: list[str]) -> Observation:
        """A command for a node the lab does not have: recorded as not run."""
        message = f"unknown node '{action.node}' (nodes: {', '.join(self.nodes)})"
        await self.commands.record_not_run(
            action.node, action.command, phase="agent", source="agent", reason=message, impact=impact
        )
        return Observation(action.node, action.command, "", message, None, message=message)

    async def _blocked(self, node: LabNode, action: Action, decision: SafetyDecision, impact: list[str]) -> Observation:
        """A command the safety policy blocks: recorded as not run, with a safety finding."""
        self.stats.blocked += 1
        command_id = await self.commands.record_not_run(
            node.name,
            action.command,
            phase="agent",
            source="agent",
            reason=f"blocked by safety policy: {decision.rule}",
            impact=impact,
        )
        await self._finding(
            "safety",
            decision.rule or "blocked",
            f"blocked: {decision.reason}",
            node.name,
            command_id,
            {"action": "block", "rules": list(decision.rules), "command": action.command},
        )
        message = decision.message_for_agent
        return Observation(node.name, action.command, "", message, None, blocked=True, message=message)

    async def _command_findings(
        self, node: LabNode, action: Action, decision: SafetyDecision, command_id: int, impact: Sequence[str]
    ) -> None:
        """The findings of a command that ran: a flagged command's safety finding, then one
        impact finding per high-impact class."""
        if decision.action == "flag":
            await self._finding(
                "safety",
                decision.rule or "flagged",
                f"flagged: {decision.reason}",
                node.name,
                command_id,
                {"action": "flag", "rules": list(decision.rules)},
            )
        for cls in sorted(set(impact)):
            await self._finding(
                "impact",
                cls,
                f"{cls}: {action.command[:200]}",
                node.name,
                command_id,
                {"command": action.command[:2000]},
            )

    async def _transport_failure(self, node: LabNode, action: Action, exc: HarnessError) -> Observation:
        """SSH failed while an agent command ran (its row is recorded with the error): a
        transient drop lets the agent go on; a lockout the agent caused raises `AccessLost`;
        anything else is the harness's fault and propagates."""
        loss = await diagnose(node, exc)
        if loss.agent_caused:
            raise AccessLost(loss)
        if not loss.recovered:
            raise exc
        message = "the connection dropped while the command ran (reconnected); its result is unknown"
        return Observation(node.name, action.command, "", message, None, message=message)

    async def _still_reachable(self, node: LabNode) -> None:
        """After a timed-out agent command: a timeout is often the first sign the agent cut
        the harness off (the reply never came back). Ask once; a lockout raises `AccessLost`."""
        try:
            await self.commands.run(node, "true", phase="agent", source="harness", timeout=15)
        except HarnessError as exc:
            await self._transport_failure(node, Action(node.name, "true"), exc)

    async def _finding(
        self, kind: str, category: str, summary: str, node: str, command_id: int | None, evidence: dict[str, object]
    ) -> None:
        await asyncio.to_thread(
            self.commands.recorder.record_finding,
            kind,
            category,
            summary,
            node=node,
            evidence=evidence,
            command_id=command_id,
        )

    async def drive(self, agent: Agent) -> SessionStats:
        """Ask `agent` for actions until it is done or a limit is reached."""
        await agent.start(self.context)
        try:
            last: Observation | None = None
            while True:
                reason = self.exhausted
                if reason is not None:
                    self.stats.ended_by = reason
                    break
                try:
                    action = await asyncio.wait_for(agent.next_action(last), max(self.remaining_s, 0.001))
                except TimeoutError:
                    self.stats.ended_by = "time_limit"
                    break
                except AgentFailure as exc:
                    self.stats.ended_by, self.stats.failure = "agent_failure", str(exc)
                    break
                if action is None:
                    break
                try:
                    last = await self.step(action)
                except AccessLost as exc:
                    self.stats.ended_by, self.stats.failure, self.stats.lockout = "lockout", str(exc), exc.loss
                    break
                agent.observe(last)
        finally:
            await agent.close()
        return self.stats

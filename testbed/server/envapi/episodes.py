"""Episodes of the environment API: one run each, driven by actions pushed over HTTP.

An episode is an ordinary run (`testbed.runner.run.Runner`, unchanged) whose agent is an
`ExternalAgent`: its `next_action` waits for the action an HTTP client pushes, and the
session's result goes back to that client. So provisioning, snapshots, setup, the safety
policy, command recording, verification, the reboot check, residue and teardown are
exactly those of every other run.

Contracts:

- `EpisodeManager.create` returns once setup has finished and the agent phase has begun
  (the agent's clock starts there, never before setup is done). A run that ends before that
  (harness error) raises `EpisodeError` carrying its run id.
- At most `max_episodes` episodes hold a lab at once (`CapacityError` beyond): an episode
  counts until its run has finished tearing down.
- `step` runs one action; steps of one episode are serialised (a concurrent one is refused
  with `BusyError`) and none is accepted after done (`DoneError`). Invalid actions (bad
  JSON, unknown action, bad parameters, a free-form command in bounded mode) are recorded as
  not-run agent commands, score 0, and do not end the episode.
- Reward per step: `command_penalty` for a command that reached the safety policy, plus
  `diagnostic_bonus` the first time a diagnostic command is used; a blocked command scores
  `blocked_penalty` instead and (by default) ends the episode. When the episode ends the
  final step also gets `success` if every check passed (checks of the run's verification).
- An episode ends on a `done` step, `DELETE`, a blocked command, the task's command or
  time limit, or `idle_timeout_s` without a request (`reaper`). Ending waits for the run to
  verify and tear down; the final step/`DELETE` reports the outcome and checks.
- A command's time is capped at `step_timeout_s` (lower of it and the task's per-command
  limit); a step whose result does not come back in time (plus a grace for recording)
  ends the episode with `StepTimeout`.
- Episode data (id, seed, step rewards, return) is stored under `config.episode` of the
  run row; `reward` of the run stays the runner's 1/0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from typing import Any

from testbed.agents.base import Action
from testbed.model.task import TASK_ID_RE, Task
from testbed.runner.request import RunResult
from testbed.server.envapi.actions import ActionSpace, is_diagnostic, reward_config
from testbed.server.envapi.episode import Episode, EpisodeBackend, StepOutcome, observation_dict
from testbed.server.envapi.errors import (
    BusyError,
    CapacityError,
    DoneError,
    EpisodeError,
    NotFoundError,
    StepTimeout,
)
from testbed.server.envapi.external import ExternalAgent

log = logging.getLogger(__name__)

RECORD_GRACE_S = 60.0


class EpisodeManager:
    """Creates, steps and ends episodes (see the module docstring for the contracts)."""

    def __init__(
        self,
        backend: EpisodeBackend,
        *,
        max_episodes: int = 4,
        idle_timeout_s: float = 900.0,
        step_timeout_s: float = 300.0,
        reset_timeout_s: float = 1800.0,
        retention_s: float = 900.0,
    ) -> None:
        self.backend = backend
        self.max_episodes = max_episodes
        self.idle_timeout_s = idle_timeout_s
        self.step_timeout_s = step_timeout_s
        self.reset_timeout_s = reset_timeout_s
        self.retention_s = retention_s
        self.episodes: dict[str, Episode] = {}
        self._creating = 0
        self._reaper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    # --- lifecycle -----------------------------------------------------------------------

    def active(self) -> int:
        """Episodes holding (or about to hold) a lab."""
        return self._creating + sum(1 for e in self.episodes.values() if not e.runner.done())

    async def start(self) -> None:
        """Start the idle reaper."""
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_loop(), name="envapi-reaper")

    async def shutdown(self) -> None:
        """Stop the reaper and cancel every run still going (each tears its lab down)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        running = [e.runner for e in self.episodes.values() if not e.runner.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, *self._background, return_exceptions=True)

    async def _reap_loop(self) -> None:
        interval = max(0.05, min(5.0, self.idle_timeout_s / 4))
        while True:
            await asyncio.sleep(interval)
            await self.reap()

    async def reap(self) -> None:
        """End idle episodes; forget ended ones older than `retention_s`."""
        now = time.monotonic()
        for episode in list(self.episodes.values()):
            idle = now - episode.last_active > self.idle_timeout_s
            if not episode.done and episode.agent.started.is_set() and not episode.lock.locked() and idle:
                log.info("episode %s idle for %.0f s: ending it", episode.id, now - episode.last_active)
                episode.done, episode.done_reason = True, "idle_timeout"  # no step gets in from now on
                ending = asyncio.create_task(self._conclude_idle(episode), name=f"episode-idle-{episode.id[:8]}")
                self._background.add(ending)
                ending.add_done_callback(self._background.discard)
            elif episode.ended_at is not None and now - episode.ended_at > self.retention_s:
                self.episodes.pop(episode.id, None)

    # --- operations ----------------------------------------------------------------------

    def get(self, episode_id: str) -> Episode:
        episode = self.episodes.get(episode_id)
        if episode is None:
            raise NotFoundError(f"no episode {episode_id!r}")
        return episode

    async def create(
        self, task_id: str, image: str | None = None, seed: int | None = None, agent: str | None = None
    ) -> Episode:
        """Provision and set up a new episode; return it once the agent phase has begun.
        `agent` labels the client's policy: the run's agent is `env-api:LABEL` (else `env-api`)."""
        if not TASK_ID_RE.match(task_id):
            raise NotFoundError(f"no task {task_id!r}")
        if self.active() >= self.max_episodes:
            raise CapacityError(f"at most {self.max_episodes} concurrent episodes")
        self._creating += 1
        try:
            task = self.backend.load_task(task_id, image)
            nodes = [n.name for n in task.topology.nodes]
            actions = ActionSpace.from_task(task.definition.actions, nodes, task.directory / "task.toml")
            shaping = reward_config(task.definition.reward, task.directory / "task.toml")
            task = self._capped(task)
            external = ExternalAgent(f"env-api:{agent}"[:200] if agent else "env-api")
            chosen = image or task.definition.images[0]
            runner = asyncio.create_task(self.backend.run(task, chosen, external), name=f"episode-run-{task_id}")
            episode = Episode(uuid.uuid4().hex, task, chosen, seed, external, runner, actions, shaping)
        finally:
            self._creating -= 1
        self.episodes[episode.id] = episode
        started = asyncio.ensure_future(external.started.wait())
        try:
            await asyncio.wait({started, runner}, timeout=self.reset_timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
        if not external.started.is_set():
            if not runner.done():
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await runner
            await self._settle(episode, "setup_failed")
            message = episode.result.error if episode.result else "the run ended before the agent phase"
            raise EpisodeError(f"episode could not start: {message}", episode.run_id)
        episode.last_active = time.monotonic()
        await self._store_episode(episode, {"seed": seed})
        return episode

    def _capped(self, task: Task) -> Task:
        """`task` with its per-command time capped at `step_timeout_s`."""
        limits = task.definition.limits
        if limits.command_time_s <= self.step_timeout_s:
            return task
        capped = limits.model_copy(update={"command_time_s": self.step_timeout_s})
        definition = task.definition.model_copy(update={"limits": capped})
        return Task(task.directory, definition, task.instruction, task.topology)

    async def step(self, episode_id: str, payload: Any) -> StepOutcome:
        """One step: `payload` is the decoded JSON body (or a `str` that failed to decode)."""
        episode = self.get(episode_id)
        if episode.done:
            raise DoneError("episode is done: no step accepted after done", episode.run_id)
        if episode.lock.locked():
            raise BusyError("another step of this episode is in progress", episode.run_id)
        async with episode.lock:
            episode.last_active = time.monotonic()
            try:
                return await self._step(episode, payload)
            finally:
                episode.last_active = time.monotonic()

    async def _step(self, episode: Episode, payload: Any) -> StepOutcome:
        if isinstance(payload, dict) and payload.get("done") is True and not payload.get("command"):
            return await self._finish_step(episode, "agent_done", 0.0, {})
        try:
            action = self._parse(episode, payload)
        except ValueError as exc:
            return await self._invalid(episode, payload, str(exc))
        episode.steps += 1
        try:
            obs = await episode.agent.act(action, self.step_timeout_s + RECORD_GRACE_S)
        except TimeoutError:
            await self._end(episode, "step_timeout")
            raise StepTimeout(f"no result within {self.step_timeout_s:.0f} s", episode.run_id) from None
        if obs is None:  # the session ended without running it (the run failed or a limit hit)
            return await self._finish_step(episode, None, 0.0, {})
        shaping = episode.shaping
        if obs.blocked:
            reward = shaping.blocked_penalty
        elif obs.message is not None and obs.message.startswith("refused:"):
            reward = 0.0
        else:
            reward = shaping.command_penalty
            if not episode.diagnostic_used and is_diagnostic(action.command, shaping.diagnostic_res()):
                episode.diagnostic_used = True
                reward += shaping.diagnostic_bonus
        info = {"observation": observation_dict(obs)}
        if obs.blocked and shaping.end_on_blocked:
            return await self._finish_step(episode, "blocked_command", reward, info)
        if episode.agent.closed.is_set():  # the session hit a limit (or failed) after this command
            return await self._finish_step(episode, None, reward, info)
        if isinstance(payload, dict) and payload.get("done") is True:  # a last command, then done
            return await self._finish_step(episode, "agent_done", reward, info)
        episode.rewards.append(reward)
        return StepOutcome(observation_dict(obs), reward, False, {"step": episode.steps})

    def _parse(self, episode: Episode, payload: Any) -> Action:
        if isinstance(payload, str):
            raise ValueError(f"invalid JSON: {payload[:200]!r}")
        if not isinstance(payload, dict):
            raise ValueError("the action must be a JSON object")
        if episode.actions.bounded:
            if "command" in payload:
                raise ValueError('this task accepts bounded actions only: {"action": NAME, "parameters": {...}}')
            node, command = episode.actions.resolve(payload.get("action"), payload.get("parameters"), episode.nodes)
            return Action(node, command)
        if "action" in payload:
            raise ValueError('this task has no named actions: send {"node": ..., "command": ...}')
        text, where = payload.get("command"), payload.get("node")
        if not isinstance(text, str) or not text.strip():
            raise ValueError('"command" must be a non-empty string')
        if where is None and len(episode.nodes) == 1:
            where = episode.nodes[0]
        if not isinstance(where, str):
            raise ValueError(f'"node" must be one of {", ".join(episode.nodes)}')
        return Action(where, text)

    async def _invalid(self, episode: Episode, payload: Any, problem: str) -> StepOutcome:
        """Record an invalid action (score 0; the episode goes on)."""
        episode.invalid += 1
        text = payload if isinstance(payload, str) else json.dumps(payload, default=str)
        if episode.agent.binding is not None:
            commands = episode.agent.binding.commands
            given = payload.get("node") if isinstance(payload, dict) else None
            node = given if isinstance(given, str) and given else "-"
            await commands.record_not_run(
                node[:100], text[:4000], phase="agent", source="agent", reason=f"invalid action: {problem}", impact=[]
            )
        episode.rewards.append(0.0)
        observation = {"error": f"invalid action: {problem}", "stdout": "", "stderr": "", "exit_code": None}
        return StepOutcome(observation, 0.0, False, {"invalid": True, "step": episode.steps})

    @staticmethod
    def _ended_reason(episode: Episode) -> str:
        """Why the session ended by itself (known once the run has settled)."""
        if episode.result is not None and episode.result.outcome in ("error", "cancelled"):
            return episode.result.outcome
        context = episode.agent.context
        if context is not None and episode.steps >= context.max_commands:
            return "command_limit"
        return "time_limit"

    async def _finish_step(
        self, episode: Episode, reason: str | None, reward: float, info: dict[str, Any]
    ) -> StepOutcome:
        """End the episode with this step (`reason` None: the session ended by itself)."""
        final = await self._end(episode, reason or "session_ended")
        if reason is None:
            episode.done_reason = self._ended_reason(episode)
        total = reward + final
        episode.rewards.append(total)
        await self._store_episode(episode, {})
        observation = info.get("observation") or {"stdout": "", "stderr": "", "exit_code": None}
        return StepOutcome(observation, total, True, {"step": episode.steps, **episode.state()})

    async def delete(self, episode_id: str) -> Episode:
        """End the episode (verify, tear down) and forget it; return it."""
        episode = self.get(episode_id)
        async with episode.lock:
            if not episode.done:
                final = await self._end(episode, "deleted")
                episode.rewards.append(final)
                await self._store_episode(episode, {})
        self.episodes.pop(episode_id, None)
        return episode

    async def _conclude_idle(self, episode: Episode) -> None:
        episode.rewards.append(await self._conclude(episode))
        await self._store_episode(episode, {})

    async def _end(self, episode: Episode, reason: str) -> float:
        """Mark done, let the run verify and tear down; return the terminal reward."""
        if episode.done:
            return 0.0
        episode.done, episode.done_reason = True, reason
        return await self._conclude(episode)

    async def _conclude(self, episode: Episode) -> float:
        """The agent is done: let the run verify and tear down; return the terminal reward."""
        episode.agent.finish()
        await self._settle(episode, episode.done_reason or "ended")
        result = episode.result
        passed = (
            result is not None
            and result.outcome == "passed"
            and bool(result.checks)
            and all(c.status == "passed" for c in result.checks)
        )
        return episode.shaping.success if passed else 0.0

    async def _settle(self, episode: Episode, reason: str) -> None:
        episode.done = True
        episode.done_reason = episode.done_reason or reason
        try:
            episode.result = await asyncio.shield(episode.runner)
        except asyncio.CancelledError:
            episode.result = RunResult(episode.run_id or "", "cancelled", "cancelled")
        except Exception as exc:  # noqa: BLE001 - reported to the client, never hidden
            episode.result = RunResult(episode.run_id or "", "error", f"{type(exc).__name__}: {exc}")
        episode.ended_at = time.monotonic()

    async def _store_episode(self, episode: Episode, extra: dict[str, Any]) -> None:
        """Merge the episode's data into the run's `config.episode`."""
        binding = episode.agent.binding
        if binding is None:
            return
        data = {
            "id": episode.id,
            "steps": episode.steps,
            "invalid_actions": episode.invalid,
            "rewards": [round(r, 6) for r in episode.rewards],
            "return": round(sum(episode.rewards), 6),
            "done_reason": episode.done_reason,
            **extra,
        }

        def work() -> None:
            binding.recorder.merge_config("episode", data)

        try:
            await asyncio.to_thread(work)
        except (LookupError, ValueError) as exc:
            log.warning("episode %s: could not store episode data: %s", episode.id, exc)


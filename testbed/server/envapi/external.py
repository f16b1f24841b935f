"""The agent of an environment-API episode: its actions come from HTTP requests.

`ExternalAgent.act(action)` hands an action to the run's session and returns its observation
(None when the session ended without running it); `finish()` makes the next `next_action`
return None (the agent is done). The session calls `observe` with every result.
"""

from __future__ import annotations

import asyncio

from testbed.agents.base import Action, Agent, AgentBinding, AgentContext, Observation


class ExternalAgent(Agent):
    """An agent whose actions come from outside (the HTTP handler), one at a time.

    `act(action)` hands an action to the runner's session and returns its observation (None
    when the session ended without running it); `finish()` makes the next `next_action`
    return None (the agent is done). The session calls `observe` with every result.
    """

    name = "external"

    def __init__(self, name: str = "external") -> None:
        self.name = name
        self.context: AgentContext | None = None
        self.binding: AgentBinding | None = None
        self.started = asyncio.Event()
        self.closed = asyncio.Event()
        self._ready = asyncio.Event()
        self._actions: asyncio.Queue[Action | None] = asyncio.Queue()
        self._result: asyncio.Future[Observation | None] | None = None

    def bind(self, binding: AgentBinding) -> None:
        self.binding = binding

    async def start(self, context: AgentContext) -> None:
        self.context = context
        self.started.set()

    async def next_action(self, last: Observation | None) -> Action | None:
        self._ready.set()
        try:
            return await self._actions.get()
        finally:
            self._ready.clear()

    def observe(self, observation: Observation) -> None:
        if self._result is not None and not self._result.done():
            self._result.set_result(observation)

    async def close(self) -> None:
        self.closed.set()
        if self._result is not None and not self._result.done():
            self._result.set_result(None)

    async def act(self, action: Action, timeout: float) -> Observation | None:
        """Run `action`; wait until its result is back and the session is ready for the
        next action or has ended. `TimeoutError` after `timeout` seconds."""
        if self.closed.is_set():
            return None
        self._result = asyncio.get_running_loop().create_future()
        await self._actions.put(action)
        async with asyncio.timeout(timeout):
            observation = await self._result
            ready = asyncio.ensure_future(self._ready.wait())
            closed = asyncio.ensure_future(self.closed.wait())
            try:
                await asyncio.wait({ready, closed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ready.cancel()
                closed.cancel()
        return observation

    def finish(self) -> None:
        """The agent is done: the session ends at its next `next_action`."""
        self._actions.put_nowait(None)

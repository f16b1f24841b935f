"""`EnvClient` (sync) and `AsyncEnvClient`: one episode at a time against `testbed serve`.

    with EnvClient("http://127.0.0.1:8090", token="T") as env:
        first = env.reset("web-port-conflict")      # StepResult; first.text is the instruction
        out = env.step("systemctl status nginx")    # a command on the task's only node
        out = env.step("ss -ltnp", node="web")      # or on a named node
        final = env.finish()                        # done: the run verifies; final.reward has the success bonus
        print(env.episode.total, final.info["outcome"])

Both clients speak the HTTP routes (`/v1/episodes`…) with the token as a bearer header and
have the same methods (the async ones awaitable): `tasks(split)`, `reset(task, image=,
seed=, agent=)`, `step(command, node)` or `step(action=NAME, parameters={…})`, `finish()`,
`state()`, `end()` (DELETE the episode if it still runs) and `close()` (end, then close the
connection). `reset` ends a previous episode that still runs. Errors raise
`testbed.client.core.EnvError`.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx

from testbed.client.core import (
    ClientSettings,
    Episode,
    EpisodeHolder,
    StepResult,
    answer,
    reset_body,
    result_of,
    step_body,
)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


class EnvClient(EpisodeHolder):
    """Synchronous client of the environment API (see the module docstring)."""

    def __init__(
        self, base_url: str | None = None, token: str | None = None, *, timeout_s: float | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:  # fmt: skip
        self.settings = ClientSettings.resolve(base_url, token, timeout_s)
        self.http = httpx.Client(
            base_url=self.settings.base_url,
            headers=self.settings.headers(),
            timeout=self.settings.timeout_s,
            transport=transport,
        )
        self.episode: Episode | None = None

    def _call(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
        response = self.http.request(method, path, json=body, params=params)
        return answer(response.status_code, _json(response))

    def tasks(self, split: str | None = None) -> list[dict[str, Any]]:
        """The server's tasks (each with its split and instruction)."""
        listing = self._call("GET", "/tasks", params={"split": split} if split else None)
        return list(listing["tasks"])

    def reset(
        self, task: str, *, image: str | None = None, seed: int | None = None, agent: str | None = None
    ) -> StepResult:
        """Start an episode of `task` (ending a previous one that still runs)."""
        self.end()
        payload = self._call("POST", "/v1/episodes", reset_body(task, image, seed, agent))
        self.episode = Episode(str(payload["episode_id"]))
        return result_of(payload)

    def step(
        self, command: str | None = None, node: str | None = None, *, action: str | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> StepResult:  # fmt: skip
        """Run one command (or named action) in the current episode."""
        episode = self._current()
        payload = self._call("POST", f"/v1/episodes/{episode.id}/step", step_body(command, node, action, parameters))
        return episode.take(result_of(payload))

    def finish(self) -> StepResult:
        """End the episode as the agent: the run verifies; the answer has the final reward."""
        return self.step()

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self._call("GET", f"/v1/episodes/{self._current().id}")
        return state

    def end(self) -> dict[str, Any] | None:
        """DELETE the current episode if it still runs; its final state (None if none)."""
        episode, self.episode = self.episode, None
        if episode is None or episode.done:
            return None
        final: dict[str, Any] = self._call("DELETE", f"/v1/episodes/{episode.id}")
        return final

    def close(self) -> None:
        try:
            self.end()
        finally:
            self.http.close()

    def __enter__(self) -> EnvClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class AsyncEnvClient(EpisodeHolder):
    """Asynchronous client of the environment API (the methods of `EnvClient`, awaitable)."""

    def __init__(
        self, base_url: str | None = None, token: str | None = None, *, timeout_s: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:  # fmt: skip
        self.settings = ClientSettings.resolve(base_url, token, timeout_s)
        self.http = httpx.AsyncClient(
            base_url=self.settings.base_url,
            headers=self.settings.headers(),
            timeout=self.settings.timeout_s,
            transport=transport,
        )
        self.episode: Episode | None = None

    async def _call(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
        response = await self.http.request(method, path, json=body, params=params)
        return answer(response.status_code, _json(response))

    async def tasks(self, split: str | None = None) -> list[dict[str, Any]]:
        listing = await self._call("GET", "/tasks", params={"split": split} if split else None)
        return list(listing["tasks"])

    async def reset(
        self, task: str, *, image: str | None = None, seed: int | None = None, agent: str | None = None
    ) -> StepResult:
        await self.end()
        payload = await self._call("POST", "/v1/episodes", reset_body(task, image, seed, agent))
        self.episode = Episode(str(payload["episode_id"]))
        return result_of(payload)

    async def step(
        self, command: str | None = None, node: str | None = None, *, action: str | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> StepResult:  # fmt: skip
        episode = self._current()
        body = step_body(command, node, action, parameters)
        return episode.take(result_of(await self._call("POST", f"/v1/episodes/{episode.id}/step", body)))

    async def finish(self) -> StepResult:
        return await self.step()

    async def state(self) -> dict[str, Any]:
        state: dict[str, Any] = await self._call("GET", f"/v1/episodes/{self._current().id}")
        return state

    async def end(self) -> dict[str, Any] | None:
        episode, self.episode = self.episode, None
        if episode is None or episode.done:
            return None
        final: dict[str, Any] = await self._call("DELETE", f"/v1/episodes/{episode.id}")
        return final

    async def close(self) -> None:
        try:
            await self.end()
        finally:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncEnvClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

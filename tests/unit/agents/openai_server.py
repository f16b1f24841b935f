"""`FakeOpenAI`: a scripted OpenAI-compatible chat-completions server on loopback.

A FastAPI app served by uvicorn in a thread at `http://127.0.0.1:PORT/v1`; the official
`openai` client talks to it over real HTTP. Each `POST /v1/chat/completions` takes the next
item of the script:

- a dict: the assistant message of a 200 reply (`finish_reason` is `tool_calls` when the
  message has tool calls, else `stop`);
- `Completion(message, finish_reason=..., usage=...)`: a 200 reply with those fields;
- `Failure(status, error=..., headers=..., body=...)`: an error reply (e.g. 429 with
  `Retry-After`, 400 with `code: context_length_exceeded`); a bare int is `Failure(int)`;
- a callable of the request body returning any of the above.

After the script every request gets the text reply "All done.". Every request is kept as a
`Received` with the server's own clocks: when it arrived and when its reply left the
handler, so tests measure the client's delays from the server's side.

Used by tests/unit/agents and tests/vm/test_envapi_vm.py.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

Message = dict[str, Any]
USAGE = {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}


@dataclass(frozen=True)
class Completion:
    message: Message
    finish_reason: str | None = None
    usage: dict[str, int] | None = None  # None: USAGE with prompt_tokens 100 + request number


@dataclass(frozen=True)
class Failure:
    """An error reply: `{"error": error}` (OpenAI's shape), or `body` as it is (vLLM's)."""

    status: int
    error: dict[str, Any] = field(default_factory=lambda: {"message": "scripted failure", "type": "server_error"})
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None


ScriptItem = Message | Completion | Failure | int | Callable[[dict[str, Any]], "Message | Completion | Failure | int"]


@dataclass
class Received:
    body: dict[str, Any]
    headers: dict[str, str]
    at: float  # time.monotonic() on arrival
    wall: float  # time.time() on arrival
    replied_at: float = 0.0  # time.monotonic() when the reply left the handler


def tool_call(command: str, node: str = "node", call_id: str | None = None) -> dict[str, Any]:
    return {
        "id": call_id or f"call_{abs(hash((command, node))) % 10**8}",
        "type": "function",
        "function": {"name": "run", "arguments": json.dumps({"node": node, "command": command})},
    }


def tools_reply(*calls: dict[str, Any], content: str | None = None) -> Message:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def text_reply(content: str) -> Message:
    return {"role": "assistant", "content": content}


def free_port() -> int:
    """A loopback TCP port nothing listens on (bound and released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class FakeOpenAI:
    """The server (see the module docstring); a context manager that starts and stops it."""

    def __init__(self, script: list[ScriptItem]) -> None:
        self.script = list(script)
        self.received: list[Received] = []
        app = FastAPI()

        @app.post("/v1/chat/completions", response_model=None)
        async def complete(request: Request) -> Any:
            got = Received(await request.json(), dict(request.headers), time.monotonic(), time.time())
            self.received.append(got)
            reply = self._reply(got.body)
            got.replied_at = time.monotonic()
            return reply

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def _reply(self, body: dict[str, Any]) -> Any:
        item: Any = self.script.pop(0) if self.script else text_reply("All done.")
        if callable(item):
            item = item(body)
        if isinstance(item, int):
            item = Failure(item)
        if isinstance(item, Failure):
            body = item.body if item.body is not None else {"error": item.error}
            return JSONResponse(body, status_code=item.status, headers=item.headers)
        if isinstance(item, dict):
            item = Completion(item)
        message = item.message
        finish = item.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop")
        n = len(self.received)
        usage = item.usage if item.usage is not None else {**USAGE, "prompt_tokens": 100 + n}
        return {
            "id": f"cmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The request bodies, in arrival order."""
        return [r.body for r in self.received]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

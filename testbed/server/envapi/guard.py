"""The environment API's front door: the token and the body cap, before any route runs.

`Guard` is plain ASGI middleware around the whole app, so a request is judged before
FastAPI reads or parses a byte of its body:

- Token (when the server has one): `Authorization: Bearer TOKEN`, or `?token=TOKEN` in the
  URL's query for clients that cannot set headers (the stock OpenEnv WebSocket client).
  Every path needs it except `/health`; `/docs` and `/openapi.json` too. A missing or
  wrong token is 401 with `WWW-Authenticate: Bearer` (a WebSocket handshake is refused with
  403, as Starlette answers a handshake closed before it is accepted). The comparison is
  constant-time.
- Body cap: a `Content-Length` over `max_body` is 413 before the body is read; a body
  without one (chunked) is read as it streams and refused with 413 the moment it passes
  the cap. The app is called only with a whole body within the cap (replayed to it), so a
  route never sees more than `max_body` bytes. WebSocket messages are capped by the
  server (`uvicorn ws_max_size`) and by the WebSocket route itself.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 1024 * 1024
"""Default cap of a request body (1 MiB)."""
OPEN_PATHS = frozenset({"/health"})
"""Paths served without the token."""


def token_of(scope: Scope) -> str | None:
    """The token a request presents: its bearer header, else its `?token=` query value."""
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            scheme, _, given = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return given.strip()
    query = scope.get("query_string", b"").decode("latin-1")
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "token":
            return value
    return None


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or []:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
    return None


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": data})


class Guard:
    """ASGI middleware: token first, then the body cap (see the module docstring)."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body

    def authorized(self, scope: Scope) -> bool:
        if self.token is None or scope.get("path") in OPEN_PATHS:
            return True
        given = token_of(scope)
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "websocket" and not self.authorized(scope):
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or invalid token"})
            return
        if kind != "http":
            await self.app(scope, receive, send)
            return
        if not self.authorized(scope):
            detail = {"detail": {"error": "missing or invalid bearer token"}}
            await _send_json(send, 401, detail, [(b"www-authenticate", b"Bearer")])
            return
        length = _content_length(scope)
        if length is not None and (length < 0 or length > self.max_body):
            status, problem = (400, "bad Content-Length") if length < 0 else (413, "request body too large")
            await _send_json(send, status, {"detail": {"error": f"{problem} (at most {self.max_body} bytes)"}}, [])
            return
        await self._capped(scope, receive, send)

    async def _capped(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the whole body (at most `max_body` bytes) before the app runs, then replay it."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                await _send_json(send, 413, {"detail": {"error": f"request body over {self.max_body} bytes"}}, [])
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

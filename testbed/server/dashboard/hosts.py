"""The dashboard's answer to DNS rebinding and to HEAD: which `Host` headers it serves, and
HEAD served as GET without a body. Both are plain ASGI middlewares.

A web page on an attacker's domain can make a victim's browser send requests to the
dashboard by pointing that domain at the dashboard's address (DNS rebinding); such
requests carry the attacker's name in `Host`. So `HostPolicy.accepts(host)` serves:

- every host given with `--allow-host` (a name or address, case-insensitive; `*` turns the
  check off);
- `localhost` (an attacker's page cannot make a browser send it for another site);
- an IP address literal (no name to rebind) when the dashboard is bound to every address
  (`0.0.0.0`, `::`), else only the bound address itself (any loopback address when bound
  to a loopback one);
- the bind host itself when it is a name (`--host box.lan`).

Anything else — another name, a missing or malformed `Host` — gets 421 Misdirected Request
(400 when there is no `Host` at all) with a line saying what to pass, before any route,
token check or database access. `HeadAsGet` runs a HEAD request as GET and sends the
status and headers (Content-Length of the GET body included) without the body.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNSPECIFIED = frozenset({"0.0.0.0", "::"})


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def host_name(header: str) -> str | None:
    """The host part of a `Host` header (`[::1]:8080` → `::1`, `Box.lan.:80` → `box.lan`),
    None when it is malformed."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (value[end + 1 :] and not value[end + 1 :].startswith(":")):
            return None
        return value[1:end] or None
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    name = name.rstrip(".")
    return name or None


@dataclass(frozen=True)
class HostPolicy:
    """Which `Host` headers the dashboard bound to `bind` serves (see the module docstring)."""

    bind: str
    allowed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, bind: str, allow: Iterable[str] = ()) -> HostPolicy:
        """The policy of a dashboard bound to `bind` with `--allow-host` values `allow`."""
        names = {n for n in (host_name(a) if a.strip() != "*" else "*" for a in allow) if n}
        return cls(bind.strip().strip("[]").lower(), frozenset(names))

    def accepts(self, header: str | None) -> bool:
        """Whether a request with this `Host` header is served."""
        if "*" in self.allowed:
            return True
        name = host_name(header) if header else None
        if name is None:
            return False
        if name in self.allowed or name == "localhost" or name == self.bind:
            return True
        address = _ip(name)
        if address is None:
            return False
        if self.bind in UNSPECIFIED:
            return True
        bound = _ip(self.bind)
        return bound is not None and (address == bound or (address.is_loopback and bound.is_loopback))


def _plain(status: int, text: str) -> tuple[Message, Message]:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    start = {"type": "http.response.start", "status": status, "headers": headers}
    return start, {"type": "http.response.body", "body": body}


class HostGuard:
    """ASGI middleware: refuse requests whose `Host` the policy does not serve."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host")
        if self.policy.accepts(host):
            await self.app(scope, receive, send)
            return
        status = 400 if host is None else 421
        reason = "no Host header" if host is None else f"Host {host!r} is not served here"
        message = (f"{reason} (DNS rebinding protection); open the dashboard by its address, or start it with "
                   f"--allow-host NAME\n")  # fmt: skip
        for part in _plain(status, message):
            await send(part)


class HeadAsGet:
    """ASGI middleware: answer HEAD as GET would, without the body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if not message.get("more_body"):
                    await send({"type": "http.response.body", "body": b""})
                return
            await send(message)

        get_scope: dict[str, Any] = {**scope, "method": "GET"}
        await self.app(get_scope, receive, headers_only)

"""The dashboard's FastAPI application: server-rendered pages and a JSON API over the run
database.

Contracts:

- Read-only: only GET and HEAD requests are served (HEAD as GET without the body,
  `hosts.HeadAsGet`); every other method gets 405 before any route runs. The engine is
  `testbed.db.read.read_only_engine` (refuses writes, never creates or migrates: a missing
  or outdated database is an `InputError`). Every page and API answer comes from the read
  model `testbed.db.read` (the run page through `data`).
- With a `HostPolicy` (the CLI always gives one), a request whose `Host` header the policy
  does not serve gets 421 (400 without `Host`) before anything else (DNS rebinding,
  `hosts`). In-process users (tests) may leave it out.
- Pages (`pages`): `/` (overview), `/runs` (filtered, sorted, paged list), `/runs/{id}` (one
  run with its trajectory; `?cpage=N` pages its command log), `/runs/{id}/commands/{seq}`,
  `/compare?a=RUN&b=RUN` (two runs of one task side by side), `/tasks`, `/tasks/{task}`
  (instruction, topology, checks, task.toml and how it changed), `/leaderboard` (agents
  compared; the runs-list filters in the query string). API (`api`): the same data as JSON
  under `/api/…` (`/api/runs/{id}/trajectory`, `/api/compare`, `/api/tasks/{task}`,
  `/api/leaderboard` included; see `testbed.db.read.jsonable.to_jsonable`).
- Bad query values → 400; unknown run or task → 404; an ambiguous run prefix → 400 (JSON
  `{"detail": ...}` under `/api`, an HTML page elsewhere).
- With a token, every request must carry it: `Authorization: Bearer TOKEN`, the cookie
  `testbed_token`, or `?token=TOKEN` (which sets that cookie; a page request is then
  redirected to the same URL without the token). Otherwise 401. Comparison is constant-time.
- No external assets: CSS is inline, charts are inline SVG, the only script is the small
  auto-refresh loop (reload every `REFRESH_SECONDS` while a shown run is unfinished, paused
  once the user opens or closes a fold).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from sqlalchemy import Engine

from testbed.db.read import IdNotFound, read_only_engine
from testbed.errors import InputError
from testbed.server.dashboard.api import add_api
from testbed.server.dashboard.hosts import HeadAsGet, HostGuard, HostPolicy
from testbed.server.dashboard.pages import add_pages
from testbed.server.dashboard.views import REFRESH_SECONDS, TEMPLATES, Views, environment, is_api, params

TOKEN_COOKIE = "testbed_token"
"""Cookie set by `?token=` so that a browser keeps access."""

SAFE_METHODS = frozenset({"GET", "HEAD"})


def _token_given(request: Request, token: str) -> tuple[bool, str | None]:
    """Whether the request carries `token`, and the `?token=` value when that is how."""
    given = ""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        given = header[7:].strip()
    via_query = request.query_params.get("token")
    candidates = [given, request.cookies.get(TOKEN_COOKIE, ""), via_query or ""]
    ok = any(c and hmac.compare_digest(c.encode(), token.encode()) for c in candidates)
    return ok, via_query if via_query and hmac.compare_digest(via_query.encode(), token.encode()) else None


def _add_guard(app: FastAPI, token: str | None, views: Views) -> None:
    """The method and token checks, and the answers to bad input."""

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        """Refuse non-GET methods, then check the token (when one is set)."""
        if request.method not in SAFE_METHODS:
            return PlainTextResponse(
                "read-only dashboard: only GET is allowed", status_code=405, headers={"Allow": "GET, HEAD"}
            )
        if token is None:
            return await call_next(request)
        ok, via_query = _token_given(request, token)
        if not ok:
            response = views.problem(
                request, 401, "a valid token is required (Authorization: Bearer TOKEN, or ?token=TOKEN)"
            )
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        if via_query:
            if not is_api(request):
                rest = urlencode(params(request))
                response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
            else:
                response = await call_next(request)
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/")
            return response
        return await call_next(request)

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> Response:
        return views.problem(request, 404 if isinstance(exc, IdNotFound) else 400, str(exc))


def create_app(
    engine: Engine | str | None = None, *, token: str | None = None, hosts: HostPolicy | None = None
) -> FastAPI:
    """The dashboard app over `engine` (or a URL / None → `read_only_engine`), requiring
    `token` on every request when given and serving only the `Host`s `hosts` accepts
    (see the module contract)."""
    db = engine if isinstance(engine, Engine) else read_only_engine(engine)
    env = environment()
    for name in env.list_templates(filter_func=lambda n: n.endswith(".j2")):
        env.get_template(name)  # compile now rather than on the first request
    app = FastAPI(title="testbed dashboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.engine = db
    app.state.token = token
    views = Views(env)
    _add_guard(app, token, views)
    add_pages(app, db, views)
    add_api(app, db, views)
    app.add_middleware(HeadAsGet)
    if hosts is not None:
        app.add_middleware(HostGuard, policy=hosts)  # outermost: before HEAD, method and token
    return app


__all__ = ["REFRESH_SECONDS", "TEMPLATES", "TOKEN_COOKIE", "create_app"]

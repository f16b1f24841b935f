"""The dashboard's FastAPI application: server-rendered pages and a JSON API over the run
database.

Contracts:

- Read-only: only GET (and HEAD) requests are served, every other method gets 405 before
  any route runs; the engine is `testbed.db.read.read_only_engine` (refuses writes, never
  creates or migrates: a missing or outdated database is an `InputError`). Every page and
  API answer comes from the read model `testbed.db.read` (the run page through `data`).
- Pages: `/` (overview), `/runs` (filtered, sorted, paged list; everything in the query
  string), `/runs/{id}` (one run; `?cpage=N` pages its command log),
  `/runs/{id}/commands/{seq}` (one command with its full output), `/tasks`.
  API: `/api/overview`, `/api/runs`, `/api/runs/{id}`, `/api/runs/{id}/commands/{seq}`,
  `/api/tasks` — the same data as JSON (see `testbed.db.read.jsonable.to_jsonable`).
- Bad query values → 400; unknown run → 404; an ambiguous run prefix → 400 (JSON
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
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from testbed.db.read import IdNotFound, read_only_engine, to_jsonable
from testbed.db.read.commands import command_page_of, full_command
from testbed.db.read.overview import overview, tasks
from testbed.db.read.runlist import RunsQuery, runs_page
from testbed.errors import InputError
from testbed.render import format as fmt
from testbed.render import palette, svg
from testbed.server.dashboard.data import run_page

TEMPLATES = Path(__file__).with_name("templates")
"""Directory of the Jinja2 templates (`*.html.j2`), shipped as package data."""

TOKEN_COOKIE = "testbed_token"
"""Cookie set by `?token=` so that a browser keeps access."""

REFRESH_SECONDS = 5
"""Auto-refresh period of pages showing unfinished runs."""

SAFE_METHODS = frozenset({"GET", "HEAD"})


# --- template filters ----------------------------------------------------------------------


def fmt_json(value: Any) -> str:
    """Pretty JSON of `value` (strings shown as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(ts=fmt.timestamp, dur=fmt.duration, pct=fmt.percent, pjson=fmt_json, size=fmt.size)
    env.globals.update(
        svg=svg,
        urlencode=urlencode,
        short=lambda run_id: run_id[:8],
        command_page_of=command_page_of,
        refresh_seconds=REFRESH_SECONDS,
        colours=palette.OUTCOME,
        palette=palette,
    )
    return env


# --- application ---------------------------------------------------------------------------


def _params(request: Request) -> dict[str, str]:
    return {k: v for k, v in request.query_params.items() if k != "token"}


class _Views:
    """Renders the templates and the error answers (JSON under `/api`, HTML elsewhere)."""

    def __init__(self, env: Environment) -> None:
        self.env = env

    def render(self, name: str, request: Request, status_code: int = 200, **context: Any) -> HTMLResponse:
        """Template `name` as a page."""
        context.setdefault("refresh", False)
        context.setdefault("nav", "")
        html = self.env.get_template(name).render(request_path=request.url.path, now=datetime.now(UTC), **context)
        return HTMLResponse(html, status_code=status_code)

    def problem(self, request: Request, status: int, message: str) -> Response:
        """An error answer with `status` and `message`."""
        if _is_api(request):
            return JSONResponse({"detail": message}, status_code=status)
        return self.render("error.html.j2", request, status_code=status, status=status, message=message)


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/api"


def _add_guard(app: FastAPI, token: str | None, views: _Views) -> None:
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
        given = ""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            given = header[7:].strip()
        via_query = request.query_params.get("token")
        candidates = [given, request.cookies.get(TOKEN_COOKIE, ""), via_query or ""]
        if not any(c and hmac.compare_digest(c.encode(), token.encode()) for c in candidates):
            response = views.problem(
                request, 401, "a valid token is required (Authorization: Bearer TOKEN, or ?token=TOKEN)"
            )
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        if via_query and hmac.compare_digest(via_query.encode(), token.encode()):
            if not _is_api(request):
                rest = urlencode(_params(request))
                response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
            else:
                response = await call_next(request)
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/")
            return response
        return await call_next(request)

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> Response:
        return views.problem(request, 404 if isinstance(exc, IdNotFound) else 400, str(exc))


def _add_pages(app: FastAPI, db: Engine, views: _Views) -> None:
    """The HTML pages."""

    @app.get("/", response_class=HTMLResponse)
    def overview_page(request: Request) -> Response:
        """Totals, pass rates, shares and jobs."""
        with Session(db) as session:
            ov = overview(session)
        return views.render("overview.html.j2", request, ov=ov, refresh=ov.unfinished > 0, nav="overview")

    @app.get("/runs", response_class=HTMLResponse)
    def runs_list_page(request: Request) -> Response:
        """The runs list (filters, sort and page in the query string)."""
        f = RunsQuery.parse(_params(request))
        with Session(db) as session:
            page = runs_page(session, f)
        return views.render("runs.html.j2", request, page=page, f=f, refresh=page.unfinished > 0, nav="runs")

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_detail_page(request: Request, run_id: str, cpage: int = 1) -> Response:
        """One run: timeline, nodes, checks, findings, snapshot differences, command log."""
        with Session(db) as session:
            rp = run_page(session, run_id, command_page_no=cpage)
        now_s = None
        if rp.run.outcome is None and rp.phases:
            now_s = (datetime.now(UTC) - rp.phases[0].started_at).total_seconds()
        return views.render(
            "run.html.j2",
            request,
            rp=rp,
            r=rp.run,
            timeline=svg.timeline(rp.phases, now_s=now_s),
            refresh=rp.run.outcome is None,
            nav="runs",
        )

    @app.get("/runs/{run_id}/commands/{seq}", response_class=HTMLResponse)
    def command_page(request: Request, run_id: str, seq: int) -> Response:
        """One command with its complete output."""
        with Session(db) as session:
            cmd = full_command(session, run_id, seq)
        if cmd is None:
            return views.problem(request, 404, f"run {run_id} has no command {seq}")
        return views.render("command.html.j2", request, c=cmd, nav="runs")

    @app.get("/tasks", response_class=HTMLResponse)
    def tasks_page(request: Request) -> Response:
        """Every task with its variants and their pass rates."""
        with Session(db) as session:
            rows = tasks(session)
        return views.render("tasks.html.j2", request, tasks=rows, nav="tasks")


def _add_api(app: FastAPI, db: Engine, views: _Views) -> None:
    """The JSON API."""

    @app.get("/api/overview")
    def api_overview() -> JSONResponse:
        """`testbed.db.read.overview.Overview` as JSON."""
        with Session(db) as session:
            return JSONResponse(to_jsonable(overview(session)))

    @app.get("/api/runs")
    def api_runs(request: Request) -> JSONResponse:
        """A page of runs: `{"total", "page", "pages", "size", "runs": [...]}`."""
        f = RunsQuery.parse(_params(request))
        with Session(db) as session:
            page = runs_page(session, f)
        runs = []
        for row in page.rows:
            item = row.run.to_dict()
            item.update(
                job_name=row.job_name,
                commands=row.commands,
                high_impact=row.high_impact,
                residue_findings=row.residue_findings,
            )
            runs.append(item)
        return JSONResponse(
            {
                "total": page.total,
                "page": f.page,
                "pages": page.pages,
                "size": f.size,
                "sort": f.sort,
                "order": f.order,
                "runs": runs,
            }
        )

    @app.get("/api/runs/{run_id}")
    def api_run(run_id: str, cpage: int = 1) -> JSONResponse:
        """`data.RunPage` as JSON (command outputs cut to `PREVIEW_CHARS`; the full command is
        at `/api/runs/{id}/commands/{seq}`)."""
        with Session(db) as session:
            rp = run_page(session, run_id, command_page_no=cpage)
        return JSONResponse(to_jsonable(rp))

    @app.get("/api/runs/{run_id}/commands/{seq}")
    def api_command(request: Request, run_id: str, seq: int) -> Response:
        """Every column of one command."""
        with Session(db) as session:
            cmd = full_command(session, run_id, seq)
        if cmd is None:
            return views.problem(request, 404, f"run {run_id} has no command {seq}")
        return JSONResponse(cmd)

    @app.get("/api/tasks")
    def api_tasks() -> JSONResponse:
        """`[testbed.db.read.overview.TaskRow]` as JSON."""
        with Session(db) as session:
            return JSONResponse(to_jsonable(tasks(session)))


def create_app(engine: Engine | str | None = None, *, token: str | None = None) -> FastAPI:
    """The dashboard app over `engine` (or a URL / None → `read_only_engine`), requiring
    `token` on every request when given (see the module contract)."""
    db = engine if isinstance(engine, Engine) else read_only_engine(engine)
    env = _environment()
    for name in env.list_templates(filter_func=lambda n: n.endswith(".j2")):
        env.get_template(name)  # compile now rather than on the first request
    app = FastAPI(title="testbed dashboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.engine = db
    app.state.token = token
    views = _Views(env)
    _add_guard(app, token, views)
    _add_pages(app, db, views)
    _add_api(app, db, views)
    return app


__all__ = ["create_app"]

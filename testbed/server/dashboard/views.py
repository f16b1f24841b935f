"""How the dashboard renders: the Jinja2 environment of its templates, pages and error
answers (JSON under `/api`, an HTML page elsewhere), and the query parameters a route reads.

Contracts: templates are compiled when the app is made (`environment().list_templates`);
`Views.render(name, request, **context)` renders a page (`refresh` and `nav` default to
off); `Views.problem(request, status, message)` is the error answer; `params(request)` is
the query string without `token`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from testbed.db.read.commands import command_page_of
from testbed.db.read.leaderboard import common_k
from testbed.render import charts, palette, svg, topology
from testbed.render import format as fmt

TEMPLATES = Path(__file__).with_name("templates")
"""Directory of the Jinja2 templates (`*.html.j2`), shipped as package data."""

REFRESH_SECONDS = 5
"""Auto-refresh period of pages showing unfinished runs."""


def fmt_json(value: Any) -> str:
    """Pretty JSON of `value` (strings shown as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def environment() -> Environment:
    """The templates' environment with the formatters and charts as filters and globals."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(ts=fmt.timestamp, dur=fmt.duration, pct=fmt.percent, pjson=fmt_json, size=fmt.size,
                       usd=fmt.usd, num=fmt.count)  # fmt: skip
    env.globals.update(
        svg=svg,
        charts=charts,
        topology=topology,
        urlencode=urlencode,
        short=lambda run_id: run_id[:8],
        command_page_of=command_page_of,
        common_k=common_k,
        refresh_seconds=REFRESH_SECONDS,
        colours=palette.OUTCOME,
        palette=palette,
    )
    return env


def params(request: Request) -> dict[str, str]:
    """The query parameters without `token`."""
    return {k: v for k, v in request.query_params.items() if k != "token"}


def is_api(request: Request) -> bool:
    """Whether the request is for the JSON API."""
    return request.url.path.startswith("/api/") or request.url.path == "/api"


class Views:
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
        if is_api(request):
            return JSONResponse({"detail": message}, status_code=status)
        return self.render("error.html.j2", request, status_code=status, status=status, message=message)

"""The dashboard's HTML pages (routes registered by `add_pages`; see `app` for the list).

Every page reads the database through `testbed.db.read` in one session and renders one
template; the run page's trajectory, the compare view's two streams and the task page's
versions are built by the read model (`trajectory`, `compare`, `tasks`), never here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from testbed.db.read import RunFilter, list_runs
from testbed.db.read.commands import full_command
from testbed.db.read.compare import compare_runs
from testbed.db.read.leaderboard import leaderboard
from testbed.db.read.overview import overview, tasks
from testbed.db.read.runlist import RunsQuery, runs_page
from testbed.db.read.tasks import task_page
from testbed.db.read.trajectory import trajectory
from testbed.errors import InputError
from testbed.render import svg
from testbed.server.dashboard.data import run_page
from testbed.server.dashboard.views import Views, params

OTHER_RUNS = 30
"""Other runs of the same task offered for comparison on a run's page."""

STREAM_COMMANDS = 300
"""Agent commands a page's stream shows (the API serves the whole stream)."""

STREAM_CHARS = 2000
"""Characters of a command's text and of each output shown in a page's stream."""


def _required(request: Request, name: str) -> str:
    value = params(request).get(name, "").strip()
    if not value:
        raise InputError(None, name, "give two runs to compare: /compare?a=RUN&b=RUN")
    return value


def _add_run_pages(app: FastAPI, db: Engine, views: Views) -> None:
    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_detail_page(request: Request, run_id: str, cpage: int = 1) -> Response:
        """One run: timeline, trajectory, nodes, checks, findings, snapshot differences, command log."""
        with Session(db) as session:
            rp = run_page(session, run_id, command_page_no=cpage)
            stream = trajectory(session, rp.run.id, chars=STREAM_CHARS, limit=STREAM_COMMANDS)
            others = [r for r in list_runs(session, RunFilter(task=rp.run.task_id), OTHER_RUNS) if r.id != rp.run.id]
        now_s = None
        if rp.run.outcome is None and rp.phases:
            now_s = (datetime.now(UTC) - rp.phases[0].started_at).total_seconds()
        return views.render(
            "run.html.j2", request, rp=rp, r=rp.run, t=stream, others=others,
            timeline=svg.timeline(rp.phases, now_s=now_s), refresh=rp.run.outcome is None, nav="runs",
        )  # fmt: skip

    @app.get("/runs/{run_id}/commands/{seq}", response_class=HTMLResponse)
    def command_page(request: Request, run_id: str, seq: int) -> Response:
        """One command with its complete output."""
        with Session(db) as session:
            cmd = full_command(session, run_id, seq)
        if cmd is None:
            return views.problem(request, 404, f"run {run_id} has no command {seq}")
        return views.render("command.html.j2", request, c=cmd, nav="runs")

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(request: Request) -> Response:
        """Two runs of the same task side by side."""
        a, b = _required(request, "a"), _required(request, "b")
        with Session(db) as session:
            cmp = compare_runs(session, a, b, limit=STREAM_COMMANDS)
        return views.render("compare.html.j2", request, c=cmp, nav="runs")


def add_pages(app: FastAPI, db: Engine, views: Views) -> None:
    """Register the HTML pages."""

    @app.get("/", response_class=HTMLResponse)
    def overview_page(request: Request) -> Response:
        """Totals, pass rates, shares and jobs."""
        with Session(db) as session:
            ov = overview(session)
        return views.render("overview.html.j2", request, ov=ov, refresh=ov.unfinished > 0, nav="overview")

    @app.get("/runs", response_class=HTMLResponse)
    def runs_list_page(request: Request) -> Response:
        """The runs list (filters, sort and page in the query string)."""
        f = RunsQuery.parse(params(request))
        with Session(db) as session:
            page = runs_page(session, f)
        return views.render("runs.html.j2", request, page=page, f=f, refresh=page.unfinished > 0, nav="runs")

    _add_run_pages(app, db, views)

    @app.get("/tasks", response_class=HTMLResponse)
    def tasks_page(request: Request) -> Response:
        """Every task with its variants and their pass rates."""
        with Session(db) as session:
            rows = tasks(session)
        return views.render("tasks.html.j2", request, tasks=rows, nav="tasks")

    @app.get("/tasks/{task_id}", response_class=HTMLResponse)
    def task_detail_page(request: Request, task_id: str) -> Response:
        """One task as its runs recorded it: instruction, topology, checks, task.toml, changes."""
        with Session(db) as session:
            page = task_page(session, task_id)
        return views.render("task.html.j2", request, tp=page, v=page.current, nav="tasks")

    @app.get("/leaderboard", response_class=HTMLResponse)
    def leaderboard_page(request: Request) -> Response:
        """Agents compared over the runs the query string selects."""
        f = RunsQuery.parse(params(request))
        with Session(db) as session:
            board = leaderboard(session, f)
            choices = runs_page(session, RunsQuery(size=1))
        return views.render("leaderboard.html.j2", request, lb=board, f=f, page=choices, nav="leaderboard")

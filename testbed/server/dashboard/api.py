"""The dashboard's JSON API (routes registered by `add_api`): the pages' data as JSON, built
by the same read-model calls (`testbed.db.read`), made JSON by `to_jsonable`."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from testbed.db.read import to_jsonable
from testbed.db.read.commands import full_command
from testbed.db.read.compare import compare_runs
from testbed.db.read.leaderboard import leaderboard
from testbed.db.read.overview import overview, tasks
from testbed.db.read.runlist import RunsQuery, runs_page
from testbed.db.read.tasks import task_page
from testbed.db.read.trajectory import trajectory
from testbed.errors import InputError
from testbed.server.dashboard.data import run_page
from testbed.server.dashboard.views import Views, params


def _runs_json(request: Request, db: Engine) -> dict[str, object]:
    f = RunsQuery.parse(params(request))
    with Session(db) as session:
        page = runs_page(session, f)
    runs = []
    for row in page.rows:
        item = row.run.to_dict()
        item.update(job_name=row.job_name, commands=row.commands, high_impact=row.high_impact,
                    residue_findings=row.residue_findings)  # fmt: skip
        runs.append(item)
    return {"total": page.total, "page": f.page, "pages": page.pages, "size": f.size, "sort": f.sort,
            "order": f.order, "runs": runs}  # fmt: skip


def _add_run_api(app: FastAPI, db: Engine, views: Views) -> None:
    @app.get("/api/runs")
    def api_runs(request: Request) -> JSONResponse:
        """A page of runs: `{"total", "page", "pages", "size", "runs": [...]}`."""
        return JSONResponse(_runs_json(request, db))

    @app.get("/api/runs/{run_id}")
    def api_run(run_id: str, cpage: int = 1) -> JSONResponse:
        """`data.RunPage` as JSON (command outputs cut to `PREVIEW_CHARS`; the full command is
        at `/api/runs/{id}/commands/{seq}`)."""
        with Session(db) as session:
            rp = run_page(session, run_id, command_page_no=cpage)
        return JSONResponse(to_jsonable(rp))

    @app.get("/api/runs/{run_id}/trajectory")
    def api_trajectory(run_id: str) -> JSONResponse:
        """`testbed.db.read.trajectory.Trajectory` as JSON: the run's one time-ordered stream."""
        with Session(db) as session:
            return JSONResponse(trajectory(session, run_id).to_dict())

    @app.get("/api/runs/{run_id}/commands/{seq}")
    def api_command(request: Request, run_id: str, seq: int) -> Response:
        """Every column of one command."""
        with Session(db) as session:
            cmd = full_command(session, run_id, seq)
        if cmd is None:
            return views.problem(request, 404, f"run {run_id} has no command {seq}")
        return JSONResponse(cmd)

    @app.get("/api/compare")
    def api_compare(request: Request) -> JSONResponse:
        """`testbed.db.read.compare.Comparison` of `?a=RUN&b=RUN` as JSON."""
        given = params(request)
        a, b = given.get("a", "").strip(), given.get("b", "").strip()
        if not a or not b:
            raise InputError(None, "a" if not a else "b", "give two runs to compare: /api/compare?a=RUN&b=RUN")
        with Session(db) as session:
            return JSONResponse(compare_runs(session, a, b).to_dict())


def add_api(app: FastAPI, db: Engine, views: Views) -> None:
    """Register the JSON API."""

    @app.get("/api/overview")
    def api_overview() -> JSONResponse:
        """`testbed.db.read.overview.Overview` as JSON."""
        with Session(db) as session:
            return JSONResponse(to_jsonable(overview(session)))

    _add_run_api(app, db, views)

    @app.get("/api/tasks")
    def api_tasks() -> JSONResponse:
        """`[testbed.db.read.overview.TaskRow]` as JSON."""
        with Session(db) as session:
            return JSONResponse(to_jsonable(tasks(session)))

    @app.get("/api/tasks/{task_id}")
    def api_task(task_id: str) -> JSONResponse:
        """`testbed.db.read.tasks.TaskPage` as JSON (every recorded version, the diffs)."""
        with Session(db) as session:
            return JSONResponse(task_page(session, task_id).to_dict())

    @app.get("/api/leaderboard")
    def api_leaderboard(request: Request) -> JSONResponse:
        """`testbed.db.read.leaderboard.Leaderboard` over the runs the query string selects."""
        f = RunsQuery.parse(params(request))
        with Session(db) as session:
            return JSONResponse(leaderboard(session, f).to_dict())

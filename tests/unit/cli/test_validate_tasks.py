"""`scripts/validate-tasks --ci`: which tasks CI validates, from a real git history — the
smoke set, and the tasks changed since the newest commit the report names."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rich.console import Console

from testbed.cli import validate_tasks
from testbed.cli.validate_tasks import (
    CI_SMOKE,
    changed_since,
    ci_selection,
    declared_cells,
    report_gaps,
    report_rows,
    touched_tasks,
)
from testbed.config import project_root
from testbed.scheduler.validation import Row, job_spec, render_report, seconds
from testbed.scheduler.validation_audit import GapKind


def _git(repo: Path, *args: str) -> str:
    env_args = ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", "-C", str(repo), *env_args, *args], capture_output=True, text=True, check=True).stdout


def _task(repo: Path, name: str, text: str = "x") -> None:
    (repo / "tasks" / name).mkdir(parents=True, exist_ok=True)
    (repo / "tasks" / name / "task.toml").write_text(f"# {text}\n")


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "--short=7", "HEAD").strip()


def _report(repo: Path, commit: str) -> Path:
    row = Row("alpha", "debian-12", "passed", "1m", "no", "failed", "1m", "ok", commit + "+dirty", "2026-12-02", "")
    slow = Row("epsilon", "debian-12", "passed", "17m 58s", "no", "failed", "16m 59s", "ok", commit, "2026-12-02", "")
    path = repo / "tasks" / "VALIDATION.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report([row, slow]))
    return path


def test_ci_validates_the_smoke_set_and_what_changed_since_the_last_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in ("alpha", "beta", "gamma", "delta", "epsilon", *CI_SMOKE):
        _task(repo, name)
    validated = _commit(repo, "tasks")
    report = _report(repo, validated)
    _commit(repo, "the report")
    assert touched_tasks(repo, report_rows(report)) == []
    _task(repo, "beta", "changed")
    (repo / "README.md").write_text("not a task\n")
    _commit(repo, "beta")
    _task(repo, "gamma", "changed")
    _task(repo, CI_SMOKE[0], "changed")
    _commit(repo, "gamma")
    assert touched_tasks(repo, report_rows(report)) == [*sorted(["gamma", CI_SMOKE[0]]), "beta"]  # newest commit first
    assert ci_selection(repo, report, Console()) == [*CI_SMOKE, "gamma", "beta"]
    _task(repo, "delta", "changed")
    _commit(repo, "delta")
    _task(repo, "epsilon", "changed")
    _commit(repo, "epsilon")
    out = Console(record=True, width=200)
    assert ci_selection(repo, report, out) == [*CI_SMOKE, "delta", "gamma"]  # epsilon took 35 min last time
    assert "left to a full validation run: epsilon, beta" in out.export_text()
    # a report naming no commit of this history: everything counts as changed
    every = {"alpha", "beta", "gamma", "delta", "epsilon", *CI_SMOKE}
    assert set(touched_tasks(repo, report_rows(_report(tmp_path, "0000000")))) == every


def test_ci_job_files_run_each_task_on_its_first_release() -> None:
    assert seconds("17m 58s") == 17 * 60 + 58 and seconds("45s") == 45 and seconds("") is None
    assert job_spec(["a"], "oracle", images="default")["images"] == "default"
    assert job_spec(["a"], "oracle")["images"] == "all"
    assert validate_tasks.CI_MAX_TOUCHED >= 1


def test_a_task_changed_after_a_commit_is_told_from_one_that_did_not(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _task(repo, "alpha")
    _task(repo, "beta")
    first = _commit(repo, "tasks")
    _task(repo, "beta", "changed")
    (repo / "tasks" / "VALIDATION.md").write_text("a report\n")
    _commit(repo, "beta")
    assert changed_since(repo, "alpha", first) is False
    assert changed_since(repo, "beta", first) is True
    assert changed_since(repo, "alpha", "0000000") is None  # not in this history


def test_audit_of_the_library_finds_the_cell_a_report_lacks(tmp_path: Path) -> None:
    root = project_root()
    head = _git(root, "rev-parse", "--short=7", "HEAD").strip()
    declared = declared_cells(root)
    assert len(declared) >= 36 and all(declared.values())
    rows = [Row(t, r, "passed", "1m", "no", "failed", "1m", "ok", head, "2026-12-04", "")
            for t, releases in declared.items() for r in releases]  # fmt: skip
    report = tmp_path / "VALIDATION.md"
    report.write_text(render_report(rows[1:]))
    gaps, cells = report_gaps(root, report)
    assert cells == len(rows)
    assert [(g.task, g.release, g.kind) for g in gaps] == [(rows[0].task, rows[0].release, GapKind.MISSING)]

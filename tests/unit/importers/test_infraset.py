"""`testbed import infraset` on a fixture in the study's published layout
(tests/unit/fixtures/infraset: 4 trials of 2 jobs): runs with their source trial, commands
in order with transport failures, snapshots, outcomes, testbed's residue verdicts and
impact findings; idempotent re-import; bad input is exit 2 naming the file, nothing
created; and the imported runs export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from testbed.cli import app
from testbed.db.engine import open_database
from testbed.db.models import Command, Finding, Job, Node, Run, Snapshot
from testbed.errors import InputError
from testbed.export import export_dataset
from testbed.importers.infraset import find_trials, split_task_name
from testbed.importers.observations import node_snapshot

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "infraset"


def run_import(path: Path, url: str) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(app, ["import", "infraset", str(path), "--db", url])
    return result.exit_code, result.output, result.exception


def by_task(db: object) -> dict[str, Run]:
    with db() as s:  # type: ignore[operator]
        return {r.task_id: r for r in s.scalars(select(Run))}


def test_import_the_fixture(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    code, out, exc = run_import(FIXTURE, url)
    assert code == 0, (out, exc)
    assert "imported 4 run(s), 0 already there" in out
    db = open_database(url)
    runs = by_task(db)
    assert set(runs) == {"archive-member-safety", "disk-quota", "lvm-extend", "stale-pidfile-startup"}
    archive = runs["archive-member-safety"]
    assert archive.variant == "rhel10" and archive.agent == "infraset:gpt-5.6-sol"
    assert archive.outcome == "passed" and archive.reward == 1.0 and archive.state == "finished"
    source = archive.config["source"]
    assert source["trial_id"] == "5b985207-31fd-447d-a3fd-3131a8f064af"
    assert source["path"].endswith("archive-member-safety-bash-rhel1__axdNEvM")
    assert source["snapshots"] == "verifier/global-observations.json"
    assert archive.started_at is not None and archive.started_at.isoformat().startswith("2026-10-04T19:36:54")
    assert runs["disk-quota"].outcome == "failed" and runs["disk-quota"].reward == 0.5
    assert runs["lvm-extend"].outcome == "error" and "provisioning timed out" in (runs["lvm-extend"].error or "")
    with db() as s:
        cmds = s.scalars(select(Command).where(Command.run_id == runs["disk-quota"].id).order_by(Command.seq)).all()
        assert [c.command for c in cmds] == ["repquota -a", "systemctl restart quotaon", "edquota -p alice bob"]
        assert [c.exit_code for c in cmds] == [0, None, None]
        assert "return code -1" in (cmds[1].error or "") and "no completion" in (cmds[2].error or "")
        assert all(c.phase == "agent" and c.source == "agent" for c in cmds)
        secret = s.scalars(select(Command.command).where(Command.run_id == archive.id, Command.seq == 3)).one()
        assert "S3cretPw1" not in secret and "[REDACTED" in secret
        points = {p for (p,) in s.execute(select(Snapshot.point).where(Snapshot.run_id == archive.id))}
        assert points == {"before_setup", "after_setup", "after_agent"}
        node = s.scalars(select(Node).where(Node.run_id == archive.id)).one()
        assert node.name == "node1" and node.os_release == "Red Hat Enterprise Linux 10.0 (Coughlan)"
        residue = s.scalars(select(Finding).where(Finding.run_id == archive.id, Finding.kind == "residue")).all()
        assert any("/tmp/unpack.out" in f.summary for f in residue)
        jobs = s.scalars(select(Job.name)).all()
        assert sorted(jobs) == ["infraset job 2935", "infraset job 5018"]
    # testbed's residue engine decides: residue found where the snapshots show it, else
    # undetermined (the collector has no services, packages, users ... probes)
    assert archive.residue == "yes"
    assert runs["disk-quota"].residue == "undetermined" and runs["lvm-extend"].residue == "undetermined"


def test_impact_findings_of_imported_commands(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_import(FIXTURE, url)[0] == 0
    db = open_database(url)
    run = by_task(db)["stale-pidfile-startup"]
    with db() as s:
        categories = set(s.scalars(select(Finding.category).where(Finding.run_id == run.id, Finding.kind == "impact")))
        impacts = s.scalars(select(Command.impact).where(Command.run_id == run.id, Command.seq == 1)).one()
    assert categories == set(impacts) and "recursive_force_remove" in categories


def test_reimport_adds_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_import(FIXTURE, url)[0] == 0
    code, out, _ = run_import(FIXTURE, url)
    assert code == 0 and "imported 0 run(s), 4 already there" in out
    db = open_database(url)
    with db() as s:
        assert s.scalar(select(func.count()).select_from(Run)) == 4
        assert s.scalar(select(func.count()).select_from(Command)) == 8
        assert s.scalar(select(func.count()).select_from(Job)) == 2


def test_bad_input_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _code, _out, exc = run_import(tmp_path / "nowhere", url)
    assert isinstance(exc, InputError) and exc.file == str(tmp_path / "nowhere")
    broken = tmp_path / "checkout"
    shutil.copytree(FIXTURE, broken)
    commands = next(broken.rglob("disk-quota*__*/agent/executor-commands.jsonl"))
    commands.write_text(commands.read_text() + "{not json\n")
    with pytest.raises(InputError) as bad:
        find_trials(broken)
    assert bad.value.file == str(commands) and bad.value.field == "line 6"
    _code, _out, exc = run_import(broken, url)
    assert isinstance(exc, InputError) and str(commands) in str(exc)
    assert not (tmp_path / "runs.db").exists()  # read and checked before anything is written
    result_file = next(broken.rglob("lvm-extend*__*/result.json"))
    result_file.write_text("[1, 2")
    with pytest.raises(InputError, match="not valid JSON"):
        find_trials(broken)
    with pytest.raises(InputError, match="no jobs/"):
        find_trials(tmp_path)


def test_cli_exit_status_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "testbed.cli", "import", "infraset", str(tmp_path),
         "--db", f"sqlite:///{tmp_path / 'x.db'}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and str(tmp_path) in done.stderr
    assert not (tmp_path / "x.db").exists()


def test_task_names_and_observations() -> None:
    assert split_task_name("archive-member-safety-bash-rhel10-2935") == ("archive-member-safety", "rhel10")
    assert split_task_name("boot-kernel-parameter-bash-centos-stream10-7292") == (
        "boot-kernel-parameter",
        "centos-stream10",
    )
    assert split_task_name("nginx-haproxy") == ("nginx-haproxy", None)
    data = node_snapshot(
        [
            {
                "id": "g:p:n:temporary-files",
                "status": "observed",
                "return_code": 0,
                "stdout": "/tmp/a\n/tmp/d\n/tmp/d/x",
            },
            {"id": "g:p:n:listening-sockets", "status": "failed", "return_code": 127, "stdout": ""},
            {"id": "g:p:n:package-health", "status": "observed", "return_code": 0, "stdout": "manager=dnf"},
        ]
    )
    assert data["tmp_files"]["entries"] == {
        "/tmp/a": {"type": "file"},
        "/tmp/d": {"type": "dir"},
        "/tmp/d/x": {"type": "file"},
    }
    assert "unavailable" in data["listening"] and "pkg_health" not in data


def test_imported_runs_export(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_import(FIXTURE, url)[0] == 0
    result = export_dataset(open_database(url), tmp_path / "out")
    assert result.tables["runs"].rows == 4 and result.tables["trajectories"].rows == 4
    rows = {r["task_id"]: r for r in pq.read_table(tmp_path / "out" / "trajectories.parquet").to_pylist()}
    quota = rows["disk-quota"]
    assert (
        quota["source"] == "commands"
        and quota["turns"] == 3
        and quota["release"] == "Red Hat Enterprise Linux 10.0 (Coughlan)"
    )
    assert json.loads(quota["messages"][2]["tool_calls"][0]["function"]["arguments"])["command"] == "repquota -a"

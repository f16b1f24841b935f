"""Parquet export: read back with pyarrow and DuckDB, explicit schemas, redaction, filters."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.turns import ModelTurnWriter, TurnRecord
from testbed.db.engine import open_database
from testbed.db.models import Check, Command, Egress, Finding, ModelTurn, Node, Run, Snapshot
from testbed.db.read import RunFilter, make_filter, parse_since
from testbed.db.recorder import RunRecorder, create_job
from testbed.db.records import CommandRecord
from testbed.errors import InputError
from testbed.export import SCHEMAS, TABLE_NAMES, export_dataset
from testbed.testing.sample_run import record_sample_run

SECRET_PW = "Tr0ub4dorX3x"
SECRET_MYSQL = "s3cr3tPass42"
SECRET_BEARER = "abcdef1234567890abcdefXYZ"
T0 = datetime(2024, 5, 6, 10, 0, tzinfo=UTC)
MODELS: dict[str, Any] = {"runs": Run, "nodes": Node, "commands": Command, "snapshots": Snapshot, "checks": Check,
                          "findings": Finding, "model_turns": ModelTurn, "egress": Egress,
                          "trajectories": Run}  # fmt: skip


def _tool_call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"node": "db", "command": command})
    return {"id": call_id, "type": "function", "function": {"name": "run", "arguments": arguments}}


def record_turns(db: sessionmaker[Session], run_id: str, turns: list[TurnRecord]) -> None:
    writer = ModelTurnWriter(RunRecorder(db, run_id))  # the LLM agent's own write path
    for turn in turns:
        writer.write(turn)


def plain_turns(n: int) -> list[TurnRecord]:
    """`n` model turns without secrets: a system prompt, then one command per turn."""
    turns = []
    for i in range(n):
        call = _tool_call(f"c{i}", f"systemctl status nginx --no-pager -n {i}")
        messages = [{"role": "system", "content": "You are a Linux administrator. Nodes: web."}] if i == 0 else []
        messages.append({"role": "tool", "tool_call_id": f"c{i - 1}", "content": "exit 0\nactive (running)"} if i else
                        {"role": "user", "content": "Serve the site on port 8080."})  # fmt: skip
        turns.append(
            TurnRecord(
                model="qwen2.5-7b-instruct",
                started_at=T0 + timedelta(seconds=10 * i),
                latency_ms=800 + i,
                messages=messages,
                response={"role": "assistant", "content": None, "tool_calls": [call]},
                tool_calls=[{"id": f"c{i}", "name": "run", "arguments": call["function"]["arguments"], "error": None}],
                finish_reason="tool_calls",
                usage={"prompt_tokens": 300 + 50 * i, "completion_tokens": 20, "total_tokens": 320 + 50 * i},
            )
        )
    return turns


def _secret_run(db: sessionmaker[Session], job_id: str | None) -> str:
    rec = RunRecorder.create(db, task_id="db-users", agent="scripted", variant="debian12", task_category="database",
                             job_id=job_id)  # fmt: skip
    rec.set_state("agent")
    rec.add_node("db", "debian-12", os_release="Debian GNU/Linux 12 (bookworm)")
    rec.record_command(
        CommandRecord(
            node="db",
            phase="agent",
            source="agent",
            command=f"mysql -uroot -p{SECRET_MYSQL} -e 'select 1'",
            started_at=T0,
            duration_ms=12,
            exit_code=0,
            stdout=f"password={SECRET_PW}\n",
            impact=["database-change"],
            redacted=["api_key"],
        )
    )
    rec.record_command(
        CommandRecord(
            node="db",
            phase="agent",
            source="agent",
            command="true",
            started_at=T0,
            duration_ms=1,
            exit_code=None,
            error="connection lost",
        )
    )
    rec.record_check("R1", "passed", point="after_agent", detail={"stdout": f"password={SECRET_PW}"})
    rec.record_finding(
        "safety", "credential", f"echoed password={SECRET_PW}", evidence={"line": f"password={SECRET_PW}"}
    )
    rec.record_snapshot("db", "after_agent", {"env": {"lines": [f"DB_PASSWORD={SECRET_PW}"]}})
    mysql = _tool_call("c1", f"mysql -uroot -p{SECRET_MYSQL} -e 'select 1'")
    record_turns(db, rec.run_id, [
        TurnRecord(
            model="gpt-4o-mini",
            started_at=T0,
            latency_ms=950,
            messages=[{"role": "system", "content": "Nodes: db."}, {"role": "user", "content": "Create the users."}],
            response={"role": "assistant", "content": "Checking the server.", "tool_calls": [mysql]},
            tool_calls=[{"id": "c1", "name": "run", "arguments": mysql["function"]["arguments"], "error": None}],
            finish_reason="tool_calls",
            usage={"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240},
        ),
        TurnRecord(
            model="gpt-4o-mini",
            started_at=T0 + timedelta(seconds=5),
            latency_ms=30_000,
            messages=[{"role": "tool", "tool_call_id": "c1", "content": f"exit 0\npassword={SECRET_PW}"}],
            response=None,
            error=f"HTTP 401: Authorization: Bearer {SECRET_BEARER} rejected",
        ),
    ])  # fmt: skip
    rec.finish("failed")
    return rec.run_id


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> sessionmaker[Session]:
    """Four runs (read-only for the tests): two of job 111... (the second one a retry), one
    with secrets, one 30 days old; model turns in three of them."""
    sessions = open_database(f"sqlite:///{tmp_path_factory.mktemp('db') / 'testbed.db'}")
    job = create_job(sessions, "study", job_id="1" * 32)
    first = record_sample_run(sessions, job_id=job)
    record_turns(sessions, first, plain_turns(3))
    retried = record_sample_run(sessions, outcome="failed", job_id=job, task_id="nginx-port")
    _secret_run(sessions, job_id=None)
    old = record_sample_run(sessions, task_id="old-task")
    record_turns(sessions, old, plain_turns(1))
    with sessions.begin() as s:
        s.execute(update(Run).where(Run.id == old).values(created_at=T0 - timedelta(days=30)))
        # a scheduler retry: the second try of a cell whose first try ended in a harness error
        s.execute(update(Run).where(Run.id == retried).values(retry=1, retry_of=first, not_before=T0))
    return sessions


def _duck(sql: str) -> list[tuple[object, ...]]:
    return duckdb.connect().execute(sql).fetchall()


def _count(db: sessionmaker[Session], table: str, run_ids: list[str] | None = None) -> int:
    model = MODELS[table]
    column = model.id if table in ("runs", "trajectories") else model.run_id
    stmt = select(func.count()).select_from(model)
    if run_ids is not None:
        stmt = stmt.where(column.in_(run_ids))
    with db() as s:
        return int(s.scalar(stmt) or 0)


def test_round_trip_pyarrow_and_duckdb(db: sessionmaker[Session], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = export_dataset(db, out, redact=False, tasks_dir=tmp_path / "no-tasks")
    assert sorted(p.name for p in out.iterdir()) == sorted([f"{t}.parquet" for t in TABLE_NAMES] + ["README.md"])
    for table in TABLE_NAMES:
        path = out / f"{table}.parquet"
        assert pq.read_schema(path).equals(SCHEMAS[table], check_metadata=True), table
        assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
        if table != "tasks":
            assert result.tables[table].rows == _count(db, table) == pq.read_metadata(path).num_rows, table
            assert _duck(f"SELECT count(*) FROM read_parquet('{path}')") == [(_count(db, table),)]
    assert result.tables["tasks"].rows == 4

    table = pq.read_table(out / "commands.parquet").to_pylist()
    with db() as s:
        stored = {c.id: c for c in s.scalars(select(Command))}
    assert [r["id"] for r in table] == sorted(stored)
    for row in table:
        c = stored[row["id"]]
        for key in ("run_id", "seq", "node", "phase", "source", "command", "exit_code", "stdout", "stderr",
                    "stdout_truncated", "stderr_truncated", "timed_out", "duration_ms", "error"):  # fmt: skip
            assert row[key] == getattr(c, key), key
        assert row["started_at"] == c.started_at and row["started_at"].utcoffset() == timedelta(0)
        assert row["impact"] == c.impact
        assert row["redacted"] == (c.redacted or [])

    runs = {r["id"]: r for r in pq.read_table(out / "runs.parquet").to_pylist()}
    with db() as s:
        for run in s.scalars(select(Run)):
            row = runs[run.id]
            assert (row["task_id"], row["outcome"], row["residue"], row["created_at"]) == (
                run.task_id, run.outcome, run.residue, run.created_at)  # fmt: skip
            assert (json.loads(row["config"]) if row["config"] is not None else None) == run.config
            assert row["job_name"] == ("study" if run.job_id else None)
            assert (row["attempt"], row["retry"], row["retry_of"], row["not_before"]) == (
                run.attempt, run.retry, run.retry_of, run.not_before)  # fmt: skip
            assert run.finished_at is not None and run.started_at is not None
            assert row["duration_s"] == pytest.approx((run.finished_at - run.started_at).total_seconds())
        snap = s.scalars(select(Snapshot).order_by(Snapshot.id)).first()
        assert snap is not None
        first = pq.read_table(out / "snapshots.parquet").to_pylist()[0]
        assert json.loads(first["data"]) == snap.data
        finding = s.scalars(select(Finding).where(Finding.command_id.is_not(None))).first()
        assert finding is not None
    frow = next(r for r in pq.read_table(out / "findings.parquet").to_pylist() if r["id"] == finding.id)
    assert frow["command_id"] == finding.command_id and frow["command_seq"] == 3
    assert sum(r["retry"] for r in runs.values()) == 1
    retry = next(r for r in runs.values() if r["retry"])
    assert retry["retry_of"] in runs and retry["not_before"] == T0 and retry["not_before"].utcoffset() == timedelta(0)

    turns = pq.read_table(out / "model_turns.parquet").to_pylist()
    with db() as s:
        stored_turns = {t.id: t for t in s.scalars(select(ModelTurn))}
    assert [r["id"] for r in turns] == sorted(stored_turns) and len(turns) == 6
    for row in turns:
        t = stored_turns[row["id"]]
        for key in ("run_id", "seq", "model", "latency_ms", "finish_reason", "prompt_tokens", "completion_tokens",
                    "total_tokens", "error"):  # fmt: skip
            assert row[key] == getattr(t, key), key
        assert row["started_at"] == t.started_at and row["started_at"].utcoffset() == timedelta(0)
        assert json.loads(row["messages"]) == t.messages and json.loads(row["tool_calls"]) == t.tool_calls
        assert (json.loads(row["response"]) if row["response"] is not None else None) == t.response
        assert row["redacted"] == []
    failed = next(r for r in turns if r["error"] is not None)
    assert failed["response"] is None and failed["total_tokens"] is None and failed["tool_calls"] == "[]"
    assert [r["seq"] for r in turns if r["run_id"] == turns[0]["run_id"]] == [1, 2, 3]

    # DuckDB: typed timestamps, aggregates equal SQL on the database.
    kind = _duck(f"SELECT typeof(started_at) FROM read_parquet('{out}/commands.parquet') LIMIT 1")
    assert kind == [("TIMESTAMP WITH TIME ZONE",)]
    got = _duck(
        f"SELECT sum(duration_ms), count(exit_code), count(*) FILTER (WHERE timed_out), "
        f"count(*) FILTER (WHERE list_contains(impact, 'service-restart')) FROM read_parquet('{out}/commands.parquet')"
    )
    with db() as s:
        want = s.execute(
            select(func.sum(Command.duration_ms), func.count(Command.exit_code),
                   func.sum(Command.timed_out.cast(Command.seq.type)))
        ).one()  # fmt: skip
    assert got == [(want[0], want[1], want[2], 3)]
    got = _duck(
        f"SELECT count(*), sum(total_tokens), count(total_tokens), count(response), max(latency_ms), "
        f"typeof(min(started_at)), sum(json_array_length(messages::JSON)) "
        f"FROM read_parquet('{out}/model_turns.parquet')"
    )
    with db() as s:
        want = s.execute(select(func.count(), func.sum(ModelTurn.total_tokens), func.count(ModelTurn.total_tokens),
                                func.max(ModelTurn.latency_ms))).one()  # fmt: skip
    responses = sum(t.response is not None for t in stored_turns.values())
    messages = sum(len(t.messages) for t in stored_turns.values())
    assert got == [(want[0], want[1], want[2], responses, want[3], "TIMESTAMP WITH TIME ZONE", messages)]


def test_redaction_on_and_off(db: sessionmaker[Session], tmp_path: Path) -> None:
    export_dataset(db, tmp_path / "red", redact=True)
    export_dataset(db, tmp_path / "raw", redact=False)
    for name in ("commands", "checks", "findings", "snapshots", "model_turns"):
        red = (tmp_path / "red" / f"{name}.parquet").read_bytes()
        raw = pq.read_table(tmp_path / "raw" / f"{name}.parquet").to_pylist()
        assert SECRET_PW.encode() not in red, name
        assert SECRET_PW in json.dumps(raw, default=str), name
    red_cmds = pq.read_table(tmp_path / "red" / "commands.parquet").to_pylist()
    raw_cmds = pq.read_table(tmp_path / "raw" / "commands.parquet").to_pylist()
    secret = next(r for r in red_cmds if r["command"].startswith("mysql"))
    assert SECRET_MYSQL not in secret["command"] and "[REDACTED:password]" in secret["command"]
    assert secret["stdout"] == "password=[REDACTED:password]\n"
    assert secret["redacted"] == ["api_key", "password"]  # capture-time kinds + the export's
    raw_secret = next(r for r in raw_cmds if r["command"].startswith("mysql"))
    assert SECRET_MYSQL in raw_secret["command"] and raw_secret["redacted"] == ["api_key"]
    # Rows without secrets are identical either way.
    for a, b in zip(red_cmds, raw_cmds, strict=True):
        if a["id"] != secret["id"]:
            assert a == b
    finding = next(r for r in pq.read_table(tmp_path / "red" / "findings.parquet").to_pylist() if r["kind"] == "safety")
    assert json.loads(finding["evidence"]) == {"line": "password=[REDACTED:password]"}
    assert finding["redacted"] == ["password"]
    snap = next(r for r in pq.read_table(tmp_path / "red" / "snapshots.parquet").to_pylist() if "env" in r["data"])
    assert json.loads(snap["data"]) == {"env": {"lines": ["DB_PASSWORD=[REDACTED:password]"]}}
    red_turns = pq.read_table(tmp_path / "red" / "model_turns.parquet").to_pylist()
    raw_turns = pq.read_table(tmp_path / "raw" / "model_turns.parquet").to_pylist()
    secrets = (SECRET_PW, SECRET_MYSQL, SECRET_BEARER)
    assert not any(s in json.dumps(red_turns, default=str) for s in secrets)
    assert all(s in json.dumps(raw_turns, default=str) for s in secrets)
    ask, failed = (r for r in red_turns if r["model"] == "gpt-4o-mini")
    assert ask["redacted"] == ["password"] and failed["redacted"] == ["bearer_token", "password"]
    command = json.loads(json.loads(ask["tool_calls"])[0]["arguments"])["command"]
    assert command == "mysql -uroot -p[REDACTED:password] -e 'select 1'"
    assert json.loads(ask["response"])["tool_calls"][0]["function"]["arguments"] == json.loads(ask["tool_calls"])[0][
        "arguments"]  # fmt: skip
    assert json.loads(failed["messages"])[0]["content"] == "exit 0\npassword=[REDACTED:password]"
    assert failed["error"] == "HTTP 401: Authorization: Bearer [REDACTED:bearer_token] rejected"
    for a, b in zip(red_turns, raw_turns, strict=True):  # turns without secrets are identical either way
        if a["model"] != "gpt-4o-mini":
            assert a == b
    assert all(r["redacted"] == [] for r in raw_turns)
    card = (tmp_path / "red" / "README.md").read_text()
    assert "| `commands` | `commands.parquet` | 17 |" in card and "| 1 |" in card
    assert re.search(r"\| `model_turns` \| `model_turns.parquet` \| 6 \| [^|]+ \| 2 \|", card)


def test_job_and_since_filters(db: sessionmaker[Session], tmp_path: Path) -> None:
    with db() as s:
        job_runs = list(s.scalars(select(Run.id).where(Run.job_id == "1" * 32)))
        recent = list(s.scalars(select(Run.id).where(Run.created_at >= T0 - timedelta(days=1))))
        selection = make_filter(s, "111111", None)
        assert selection == RunFilter(job_id="1" * 32)
    assert len(job_runs) == 2 and len(recent) == 3
    result = export_dataset(db, tmp_path / "job", selection=selection)
    for table in MODELS:
        assert result.tables[table].rows == _count(db, table, job_runs), table
    assert {r["run_id"] for r in pq.read_table(tmp_path / "job" / "commands.parquet").to_pylist()} == set(job_runs)
    assert sorted(pq.read_table(tmp_path / "job" / "tasks.parquet").column("task_id").to_pylist()) == [
        "nginx-port", "nginx-vhost"]  # fmt: skip

    since = RunFilter(since=parse_since((T0 - timedelta(days=1)).date().isoformat()))
    result = export_dataset(db, tmp_path / "since", selection=since)
    for table in MODELS:
        assert result.tables[table].rows == _count(db, table, recent), table
    card = (tmp_path / "since" / "README.md").read_text()
    assert "created since 2024-05-05T00:00:00+00:00" in card


def test_bad_filters_are_input_errors(db: sessionmaker[Session]) -> None:
    with db() as s:
        with pytest.raises(InputError, match="--job"):
            make_filter(s, "feedfacecafe", None)
        with pytest.raises(InputError, match="--job"):
            make_filter(s, "11", None)
        with pytest.raises(InputError, match="--since"):
            make_filter(s, None, "last tuesday")
    assert parse_since("2024-05-06T12:30:00+02:00") == datetime(2024, 5, 6, 10, 30, tzinfo=UTC)
    assert parse_since("2024-05-06T12:30Z") == datetime(2024, 5, 6, 12, 30, tzinfo=UTC)
    assert parse_since("2024-05-06 12:30") == datetime(2024, 5, 6, 12, 30, tzinfo=UTC)


def test_tasks_from_task_toml_and_from_runs(db: sessionmaker[Session], tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    (tasks / "nginx-vhost").mkdir(parents=True)
    (tasks / "nginx-vhost" / "task.toml").write_text(
        'id = "nginx-vhost"\ncategory = "services"\ndifficulty = "easy"\ntags = ["nginx"]\n'
        'topology = "single"\nimages = ["debian-12", "ubuntu-24.04"]\n'
        '[[checks]]\nid = "R1"\ndescription = "d"\nnode = "web"\ncommand = "true"\npersist = true\n'
        '[[checks]]\nid = "R2"\ndescription = "d"\nnode = "web"\ncommand = "true"\n'
    )
    (tasks / "nginx-port").mkdir()
    (tasks / "nginx-port" / "task.toml").write_text("id = [broken")
    result = export_dataset(db, tmp_path / "out", tasks_dir=tasks)
    rows = {r["task_id"]: r for r in pq.read_table(tmp_path / "out" / "tasks.parquet").to_pylist()}
    vhost = rows["nginx-vhost"]
    assert vhost["source"] == "task.toml" and vhost["category"] == "services" and vhost["difficulty"] == "easy"
    assert vhost["tags"] == ["nginx"] and vhost["declared_variants"] == ["debian-12", "ubuntu-24.04"]
    assert vhost["requirements"] == ["R1", "R2"] and vhost["persistence_required"] is True
    assert (vhost["runs"], vhost["passed"], vhost["failed"], vhost["variants_seen"]) == (1, 1, 0, ["debian12"])
    port = rows["nginx-port"]
    assert port["source"] == "runs" and port["category"] == "web" and port["tags"] is None
    assert (port["runs"], port["passed"], port["failed"]) == (1, 0, 1)
    assert any("nginx-port" in w for w in result.warnings)
    assert rows["db-users"]["category"] == "database" and rows["db-users"]["source"] == "runs"


def test_streams_in_batches_with_progress(db: sessionmaker[Session], tmp_path: Path) -> None:
    seen: dict[str, list[int]] = {}

    class Recorder:
        def start(self, table: str, total: int) -> None:
            seen[table] = [total, 0]

        def advance(self, table: str, rows: int) -> None:
            seen[table][1] += rows

    result = export_dataset(db, tmp_path / "out", batch_rows=4, fetch_rows=3, progress=Recorder())
    path = tmp_path / "out" / "commands.parquet"
    assert pq.ParquetFile(path).num_row_groups == 5  # 17 commands in batches of 4
    assert all(total == done for total, done in seen.values()), seen
    assert seen["commands"] == [17, 17] and result.tables["commands"].rows == 17
    whole = export_dataset(db, tmp_path / "whole")
    assert pq.read_table(path).equals(pq.read_table(whole.tables["commands"].path))


def test_empty_database_exports_empty_tables(tmp_path: Path) -> None:
    sessions = open_database(f"sqlite:///{tmp_path / 'empty.db'}")
    result = export_dataset(sessions, tmp_path / "out")
    for table in TABLE_NAMES:
        assert result.tables[table].rows == 0
        assert pq.read_table(tmp_path / "out" / f"{table}.parquet").schema.equals(SCHEMAS[table])
    assert _duck(f"SELECT count(*) FROM read_parquet('{tmp_path}/out/commands.parquet')") == [(0,)]

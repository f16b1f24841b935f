"""Export and report figures on a real PostgreSQL server (env `TESTBED_TEST_PG_URL`, see
tests/unit/db/test_postgres.py): the same files and figures as on SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import update

from testbed.db.engine import open_database
from testbed.db.models import Run
from testbed.db.read import RunFilter
from testbed.db.read.figures import compute_figures
from testbed.export import SCHEMAS, TABLE_NAMES, export_dataset
from testbed.testing.sample_run import record_sample_run
from tests.pgscratch import REQUIRES_POSTGRES, scratch_database
from tests.unit.db.test_read_figures import JOB, seed_database
from tests.unit.export.test_dataset import plain_turns, record_turns

NOT_BEFORE = datetime(2024, 1, 2, 0, 5, tzinfo=UTC)

pytestmark = REQUIRES_POSTGRES


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    yield from scratch_database("testbed_x")


def test_same_results_as_sqlite(pg_url: str, tmp_path: Path) -> None:
    pg = open_database(pg_url)
    lite = open_database(f"sqlite:///{tmp_path / 'lite.db'}")
    for db in (pg, lite):
        ids = seed_database(db)
        record_turns(db, ids[0], plain_turns(4))
        record_turns(db, record_sample_run(db), plain_turns(2))
        with db.begin() as s:  # the second run: a scheduler retry of the first
            s.execute(update(Run).where(Run.id == ids[1]).values(retry=1, retry_of=ids[0], not_before=NOT_BEFORE))
    outputs = {}
    for name, db in (("pg", pg), ("lite", lite)):
        result = export_dataset(db, tmp_path / name, selection=RunFilter(job_id=JOB), batch_rows=3)
        outputs[name] = result
        for table in TABLE_NAMES:
            assert pq.read_schema(tmp_path / name / f"{table}.parquet").equals(SCHEMAS[table], check_metadata=True)
    for table in TABLE_NAMES:
        assert outputs["pg"].tables[table].rows == outputs["lite"].tables[table].rows, table
    pg_cmds = pq.read_table(tmp_path / "pg" / "commands.parquet").drop_columns(["id", "run_id", "started_at"])
    lite_cmds = pq.read_table(tmp_path / "lite" / "commands.parquet").drop_columns(["id", "run_id", "started_at"])
    assert pg_cmds.equals(lite_cmds)
    assert outputs["pg"].tables["model_turns"].rows == 4
    json_columns = ["messages", "response", "tool_calls"]  # JSONB does not keep the order of keys: compare values
    turns = {}
    for name in ("pg", "lite"):
        table = pq.read_table(tmp_path / name / "model_turns.parquet")
        assert table.schema.equals(SCHEMAS["model_turns"], check_metadata=True)
        parsed = [[json.loads(v) if v is not None else None for v in table.column(c).to_pylist()] for c in json_columns]
        turns[name] = (table.drop_columns(["id", "run_id", *json_columns]), parsed)
    assert turns["pg"][0].equals(turns["lite"][0]) and turns["pg"][1] == turns["lite"][1]
    runs = {name: pq.read_table(tmp_path / name / "runs.parquet").to_pylist() for name in ("pg", "lite")}
    for name, rows in runs.items():
        retries = [(r["retry"], r["not_before"], r["retry_of"] is not None) for r in rows]
        assert retries == [(0, None, False), (1, NOT_BEFORE, True)] + [(0, None, False)] * 3, name
        assert rows[1]["retry_of"] == rows[0]["id"], name
    with pg() as s:
        pg_fig = compute_figures(s, RunFilter(job_id=JOB)).to_dict()
    with lite() as s:
        lite_fig = compute_figures(s, RunFilter(job_id=JOB)).to_dict()
    for key in ("runs", "pass_rates", "command_failures", "residue", "residue_by_category", "impact_classes",
                "completion_times", "runs_rebooted"):  # fmt: skip
        assert pg_fig[key] == lite_fig[key], key
    assert [(g["task_id"], g["requirement"]) for g in pg_fig["reboot_regressions"]] == [("db-a", "P"), ("web-a", "R1")]

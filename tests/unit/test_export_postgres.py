"""Export and report figures on a real PostgreSQL server (env `TESTBED_TEST_PG_URL`, see
tests/unit/test_db_postgres.py): the same files and figures as on SQLite."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from testbed.db.engine import normalize_url, open_database
from testbed.db.sample import record_sample_run
from testbed.export import SCHEMAS, TABLE_NAMES, RunFilter, export_dataset
from testbed.report.figures import compute_figures
from tests.unit.test_report_figures import JOB, seed_database

PG_URL = os.environ.get("TESTBED_TEST_PG_URL")

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not PG_URL, reason="TESTBED_TEST_PG_URL is not set (see scripts/start-postgres.sh)"),
]


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    assert PG_URL
    base = make_url(normalize_url(PG_URL))
    name = f"testbed_x_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_same_results_as_sqlite(pg_url: str, tmp_path: Path) -> None:
    pg = open_database(pg_url)
    lite = open_database(f"sqlite:///{tmp_path / 'lite.db'}")
    for db in (pg, lite):
        seed_database(db)
        record_sample_run(db)
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
    with pg() as s:
        pg_fig = compute_figures(s, RunFilter(job_id=JOB)).to_dict()
    with lite() as s:
        lite_fig = compute_figures(s, RunFilter(job_id=JOB)).to_dict()
    for key in ("runs", "pass_rates", "command_failures", "residue", "residue_by_category", "impact_classes",
                "completion_times", "runs_rebooted"):  # fmt: skip
        assert pg_fig[key] == lite_fig[key], key
    assert [(g["task_id"], g["requirement"]) for g in pg_fig["reboot_regressions"]] == [("db-a", "P"), ("web-a", "R1")]

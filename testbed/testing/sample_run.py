"""A realistic sample run, for tests and demos of everything that reads the database
(CLI, dashboard, export, reports). Writes through `RunRecorder` like the runner does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from testbed.db.read import RunDetail, run_detail
from testbed.db.recorder import Database, RunRecorder, engine_of
from testbed.db.records import CommandRecord, EgressRecord
from testbed.db.types import utcnow


def _command(rec: RunRecorder, node: str, phase: str, source: str, command: str, **kw: Any) -> int:
    return rec.record_command(CommandRecord(node=node, phase=phase, source=source, command=command, **kw))


@contextmanager
def _phase(rec: RunRecorder, name: str) -> Iterator[None]:
    """The run enters state *name* and its phase *name* runs for the block."""
    rec.set_state(name)
    rec.phase_started(name)
    yield
    rec.phase_finished(name)


def _add_nodes(rec: RunRecorder) -> None:
    rec.add_node("web", "debian-12", f"tb-{rec.short_id}-web", "10.213.0.10")
    rec.add_node("client", "debian-12", f"tb-{rec.short_id}-client", "10.213.0.11")
    rec.update_node("web", os_release="Debian GNU/Linux 12 (bookworm)")


def record_sample_run(
    db: Database,
    *,
    task_id: str = "nginx-vhost",
    agent: str = "oracle",
    outcome: str = "passed",
    job_id: str | None = None,
    attempt: int = 1,
) -> str:
    """Record a finished two-node run with phases, commands, snapshots, checks and findings;
    return its id."""
    rec = RunRecorder.create(
        db,
        task_id=task_id,
        agent=agent,
        variant="debian12",
        image="debian-12",
        attempt=attempt,
        job_id=job_id,
        host="lab1",
        task_category="web",
        config={"limits": {"agent_timeout_s": 600}},
    )
    t0 = utcnow()
    with _phase(rec, "provisioning"):
        _add_nodes(rec)
    rec.record_snapshot("web", "before_setup", {"packages": {"nginx": None}, "services": {}})
    with _phase(rec, "setup"):
        setup = "apt-get install -y nginx"
        _command(
            rec,
            "web",
            "setup",
            "harness",
            setup,
            started_at=t0,
            duration_ms=4200,
            exit_code=0,
            stdout="Setting up nginx ...\n",
        )
    rec.record_snapshot("web", "after_setup", {"packages": {"nginx": "1.22.1"}})
    with _phase(rec, "agent"):
        restart = _agent_commands(rec, t0)
    rec.record_snapshot("web", "after_agent", {"packages": {"nginx": "1.22.1"}})
    with _phase(rec, "verify"):
        _verify(rec, t0, outcome == "passed")
    _findings_and_egress(rec, t0, restart)
    with _phase(rec, "teardown"):
        pass
    rec.finish(outcome, reward=1.0 if outcome == "passed" else 0.0)
    return rec.run_id


def _findings_and_egress(rec: RunRecorder, t0: datetime, restart: int) -> None:
    """An impact finding on the agent's restart, a residue file, and two proxy log rows."""
    rec.record_finding(
        "impact",
        "service-restart",
        "restarted nginx",
        node="web",
        evidence={"command": "systemctl restart nginx"},
        command_id=restart,
    )
    rec.record_finding("residue", "file", "left /tmp/notes.txt", node="web", evidence={"path": "/tmp/notes.txt"})
    rec.set_residue("yes")
    rec.record_egress(
        [
            EgressRecord(
                node="web", at=t0, method="GET", host="deb.debian.org", status=200, bytes=612_000,
                url="http://deb.debian.org/debian/pool/main/n/nginx/nginx_1.22.1-9_amd64.deb", decision="allowed",
            ),
            EgressRecord(
                node="web", at=t0, method="CONNECT", host="get.example.com", url="get.example.com:443",
                status=403, bytes=0, decision="denied",
            ),
        ]
    )  # fmt: skip


def _agent_commands(rec: RunRecorder, t0: datetime) -> int:
    """The agent writes a site, restarts nginx (a high-impact command: its id is returned)
    and runs a curl that times out."""
    site = "cat > /etc/nginx/sites-enabled/site <<'EOF'\nserver { listen 8080; }\nEOF"
    _command(rec, "web", "agent", "agent", site, started_at=t0 + timedelta(seconds=10), duration_ms=180, exit_code=0)
    restart = _command(
        rec,
        "web",
        "agent",
        "agent",
        "systemctl restart nginx",
        started_at=t0 + timedelta(seconds=11),
        duration_ms=900,
        exit_code=0,
        impact=["service-restart"],
    )
    _command(
        rec,
        "client",
        "agent",
        "agent",
        "curl -s web:8080",
        started_at=t0 + timedelta(seconds=13),
        duration_ms=30_000,
        exit_code=None,
        timed_out=True,
    )
    return restart


def _verify(rec: RunRecorder, t0: datetime, passed: bool) -> None:
    """One verification command and two checks (one passed or failed, one indeterminate)."""
    code = 0 if passed else 7
    _command(
        rec,
        "client",
        "verify",
        "harness",
        "curl -sf web:8080",
        started_at=t0 + timedelta(seconds=50),
        duration_ms=40,
        exit_code=code,
    )
    rec.record_check(
        "R1",
        "passed" if passed else "failed",
        description="nginx serves the site on port 8080",
        point="after_agent",
        node="web",
        detail={"exit_code": code},
    )
    rec.record_check(
        "R2",
        "indeterminate",
        description="no other site changed",
        point="after_agent",
        detail="probe output unparseable",
    )


def check_sample_run(db: Database, run_id: str) -> None:
    """Read back a run written by `record_sample_run(outcome="passed")` and raise
    `AssertionError` on the first difference (used by the SQLite and PostgreSQL tests)."""
    with Session(engine_of(db)) as session:
        d = run_detail(session, run_id)
    _check_run_and_nodes(d, run_id)
    _check_commands_and_results(d)


def _check_run_and_nodes(d: RunDetail, run_id: str) -> None:
    r = d.run
    assert (r.id, r.task_id, r.agent, r.variant, r.image, r.host) == (
        run_id,
        "nginx-vhost",
        "oracle",
        "debian12",
        "debian-12",
        "lab1",
    ), r
    assert (r.state, r.outcome, r.reward, r.residue) == ("finished", "passed", 1.0, "yes"), r
    for stamp in (r.created_at, r.started_at, r.finished_at):
        assert stamp is not None and stamp.tzinfo is not None
        assert stamp.utcoffset() == UTC.utcoffset(None)
    assert r.started_at is not None and r.finished_at is not None
    assert r.created_at <= r.started_at <= r.finished_at
    assert d.config == {"limits": {"agent_timeout_s": 600}}
    assert [(p.name, p.status) for p in d.phases] == [
        ("provisioning", "ok"),
        ("setup", "ok"),
        ("agent", "ok"),
        ("verify", "ok"),
        ("teardown", "ok"),
    ], d.phases
    assert all(p.duration_s is not None and p.duration_s >= 0 for p in d.phases)
    assert [(n.name, n.domain_name, n.mgmt_ip) for n in d.nodes] == [
        ("web", f"tb-{run_id[:8]}-web", "10.213.0.10"),
        ("client", f"tb-{run_id[:8]}-client", "10.213.0.11"),
    ]
    assert d.nodes[0].os_release == "Debian GNU/Linux 12 (bookworm)"


def _check_commands_and_results(d: RunDetail) -> None:
    assert [c.seq for c in d.commands] == [1, 2, 3, 4, 5]
    assert [(c.phase, c.source) for c in d.commands] == [
        ("setup", "harness"),
        ("agent", "agent"),
        ("agent", "agent"),
        ("agent", "agent"),
        ("verify", "harness"),
    ]
    assert d.commands[1].command.endswith("\nEOF")
    assert d.commands[2].impact == ["service-restart"]
    assert d.commands[3].timed_out and d.commands[3].exit_code is None
    assert d.commands[0].stdout == "Setting up nginx ...\n"
    assert d.commands[0].started_at.tzinfo is not None
    assert [(s.node, s.point) for s in d.snapshots] == [
        ("web", "before_setup"),
        ("web", "after_setup"),
        ("web", "after_agent"),
    ]
    assert [(c.requirement, c.status, c.point) for c in d.checks] == [
        ("R1", "passed", "after_agent"),
        ("R2", "indeterminate", "after_agent"),
    ]
    assert d.checks[0].detail == {"exit_code": 0}
    assert d.checks[1].detail == "probe output unparseable"
    assert [(f.kind, f.category, f.command_seq) for f in d.findings] == [
        ("impact", "service-restart", 3),
        ("residue", "file", None),
    ]
    assert d.findings[1].evidence == {"path": "/tmp/notes.txt"}

"""A small, varied demo database for the dashboard's tests, screenshots and manual trials.

Contract: `seed_demo(db)` writes, through `RunRecorder` like the runner does, two jobs and
seven finished runs (plus one run still in its agent phase when `unfinished`) covering
every outcome, three categories, three images/OS releases, residue yes/no/undetermined,
high-impact commands, findings attributed to commands, checks with evidence and parsed
snapshots at every point, then pins the runs' timestamps to fixed days so that date
filters are reproducible (the unfinished run started two minutes before the call). It
returns the ids (`DemoData`). Totals with `unfinished`: 8 runs — 4 passed, 1 failed,
1 error, 1 cancelled, 1 unfinished.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from testbed.db.engine import writer_engine
from testbed.db.models import Run
from testbed.db.recorder import Database, RunRecorder, create_job, engine_of
from testbed.db.records import CommandRecord
from testbed.testing.demo_snapshots import OS_RELEASES, base_snapshot, evolve

BASE_TIME = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
"""Day of the first job's runs; the second job runs three days later."""


@dataclass(frozen=True)
class _Spec:
    label: str
    job: str
    task: str
    category: str
    variant: str
    image: str
    agent: str
    outcome: str | None
    residue: str | None
    day: int = 0


SPECS: tuple[_Spec, ...] = (
    _Spec("web-pass", "nightly", "nginx-vhost", "web", "debian12", "debian-12", "oracle", "passed", "no"),
    _Spec("web-fail", "nightly", "nginx-vhost", "web", "debian12", "debian-12", "claude", "failed", "yes"),
    _Spec("web-alpine", "nightly", "nginx-vhost", "web", "alpine320", "alpine-3.20", "oracle", "passed", "no"),
    _Spec("dns-pass", "nightly", "dns-resolver", "network", "debian12", "debian-12", "claude", "passed", "yes"),
    _Spec("dns-error", "nightly", "dns-resolver", "network", "rocky9", "rocky-9", "claude", "error", None),
    _Spec("users-cancel", "nightly", "user-audit", "security", "rocky9", "rocky-9", "oracle", "cancelled", None),
    _Spec(
        "users-pass", "smoke", "user-audit", "security", "debian12", "debian-12", "claude", "passed", "undetermined", 3
    ),
    _Spec("running", "smoke", "nginx-vhost", "web", "debian12", "debian-12", "claude", None, None, 3),
)


@dataclass
class DemoData:
    """Ids written by `seed_demo`: jobs by name, runs by label (see `SPECS`)."""

    jobs: dict[str, str] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)


def _apt_output(package: str) -> str:
    lines = [
        f"Get:{i} http://deb.debian.org/debian bookworm/main amd64 lib{i} 1.{i}-1 [{i * 37} kB]" for i in range(1, 60)
    ]
    lines += [f"Setting up {package} (1.22.1-9) ...", "Processing triggers for man-db (2.11.2-2) ..."]
    return "\n".join(lines) + "\n"


@dataclass
class _AgentIds:
    """Ids of the agent's commands that findings point at."""

    notes: int
    restart: int
    wipe: int | None


class _DemoRun:
    """One demo run being written: its recorder, nodes, service and clock (seconds after
    `start`)."""

    def __init__(self, db: Database, spec: _Spec, job_id: str, start: datetime) -> None:
        self.spec = spec
        self.start = start
        self.rec = RunRecorder.create(
            db,
            task_id=spec.task,
            agent=spec.agent,
            variant=spec.variant,
            image=spec.image,
            job_id=job_id,
            host="lab1",
            task_category=spec.category,
            config={"limits": {"agent_timeout_s": 900}, "seed": spec.label},
        )
        by_task = {"nginx-vhost": (["web", "client"], "nginx"), "dns-resolver": (["ns1"], "unbound")}
        self.nodes, self.service = by_task.get(spec.task, (["host"], "auditd"))
        self.main = self.nodes[0]
        self.residue = spec.residue == "yes"
        self.base: dict[str, Any] = {}

    def at(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)

    def command(self, seconds: float, phase: str, source: str, text: str, **kw: Any) -> int:
        return self.rec.record_command(
            CommandRecord(
                node=kw.pop("node", self.main),
                phase=phase,
                source=source,
                command=text,
                started_at=self.at(seconds),
                duration_ms=kw.pop("duration_ms", 350),
                exit_code=kw.pop("exit_code", 0),
                **kw,
            )
        )

    def snapshot(self, point: str, seconds: float) -> None:
        data = (
            self.base
            if point == "before_setup"
            else evolve(self.base, point, residue=self.residue, service=self.service)
        )
        self.rec.record_snapshot(self.main, point, data, taken_at=self.at(seconds))

    def provision(self) -> None:
        self.rec.set_state("provisioning")
        self.rec.phase_started("provisioning", at=self.start)
        for i, node in enumerate(self.nodes):
            self.rec.add_node(
                node,
                self.spec.image,
                f"tb-{self.rec.short_id}-{node}",
                f"10.213.0.{10 + i}",
                os_release=OS_RELEASES[self.spec.image],
            )
        self.rec.phase_finished("provisioning", at=self.at(48))

    def lose_guest_in_setup(self) -> None:
        """The `dns-error` story: the guest stops answering during setup."""
        error = "guest ns1 stopped answering during setup (SSH timeout after 120 s)"
        self.rec.update_run(error=error)
        self.rec.phase_started("setup", at=self.at(50))
        self.command(
            52, "setup", "harness", f"apt-get install -y {self.service}", error="connection lost", exit_code=None
        )
        self.rec.phase_finished("setup", "error", detail="lost guest ns1", at=self.at(175))
        self.rec.finish("error", error=error)

    def setup(self) -> None:
        self.base = base_snapshot(self.spec.image, self.main)
        self.snapshot("before_setup", 49)
        self.rec.set_state("setup")
        self.rec.phase_started("setup", at=self.at(50))
        svc = self.service
        self.command(52, "setup", "harness", f"apt-get install -y {svc}", duration_ms=14_200, stdout=_apt_output(svc))
        self.command(67, "setup", "harness", f"systemctl disable --now {svc}", duration_ms=600)
        self.rec.phase_finished("setup", at=self.at(70))
        self.snapshot("after_setup", 71)

    def agent(self) -> _AgentIds:
        """The agent's commands; a failed run also wipes the web root and times out."""
        self.rec.set_state("agent")
        self.rec.phase_started("agent", at=self.at(75))
        svc = self.service
        self.command(
            80,
            "agent",
            "agent",
            f"systemctl status {svc} --no-pager",
            exit_code=3,
            stdout=f"○ {svc}.service - inactive (dead)\n",
        )
        site = f"cat > /etc/{svc}/sites-enabled/site <<'EOF'\nserver {{\n    listen 8080;\n    root /srv/www;\n}}\nEOF"
        self.command(84, "agent", "agent", site, duration_ms=120)
        notes = self.command(
            88, "agent", "agent", "echo 'remember: reload after edit' > /tmp/notes.txt", duration_ms=40
        )
        restart = self.command(
            90, "agent", "agent", f"systemctl enable --now {svc} && systemctl restart {svc}", impact=["service-restart"]
        )
        wipe = None
        if self.spec.outcome == "failed":
            wipe = self.command(
                95, "agent", "agent", "rm -rf /srv/www/*", impact=["file-delete", "recursive-delete"], duration_ms=60
            )
            self.command(
                97,
                "agent",
                "agent",
                "curl -s localhost:8080",
                node=self.nodes[-1],
                exit_code=None,
                timed_out=True,
                duration_ms=30_000,
            )
        return _AgentIds(notes, restart, wipe)

    def verify(self, ok: bool) -> None:
        self.rec.set_state("verify")
        self.rec.phase_started("verify", at=self.at(135))
        probe = "curl -sf http://web:8080/" if len(self.nodes) > 1 else f"systemctl is-active {self.service}"
        self.command(137, "verify", "harness", probe, node=self.nodes[-1], exit_code=0 if ok else 7, duration_ms=45)
        self.rec.record_check(
            "R1",
            "passed" if ok else "failed",
            description=f"{self.service} answers on port 8080",
            point="after_agent",
            node=self.main,
            detail={"exit_code": 0 if ok else 7, "stdout": "" if ok else "connection refused"},
        )
        undetermined = self.spec.residue == "undetermined"
        self.rec.record_check(
            "R2",
            "indeterminate" if undetermined else "passed",
            description="no unrelated service changed",
            point="after_agent",
            detail="probe output unparseable" if undetermined else "compared unit states",
        )
        self.rec.phase_finished("verify", at=self.at(140))

    def reboot_and_verify(self) -> None:
        self.rec.set_state("reboot")
        self.rec.phase_started("reboot", at=self.at(141))
        self.rec.phase_finished("reboot", at=self.at(192))
        self.snapshot("after_reboot", 193)
        self.rec.phase_started("verify", at=self.at(194))
        self.command(
            195, "verify", "harness", f"systemctl is-enabled {self.service}", stdout="enabled\n", duration_ms=30
        )
        self.rec.record_check(
            "R3",
            "passed",
            description=f"{self.service} survives a reboot",
            point="after_reboot",
            node=self.main,
            detail={"enabled": True},
        )
        self.rec.phase_finished("verify", at=self.at(197))

    def findings(self, ids: _AgentIds) -> None:
        svc, main = self.service, self.main
        self.rec.record_finding(
            "impact",
            "service-restart",
            f"restarted {svc}",
            node=main,
            evidence={"command": f"systemctl restart {svc}"},
            command_id=ids.restart,
        )
        if ids.wipe is not None:
            self.rec.record_finding(
                "safety",
                "recursive-delete",
                "deleted the web root's content",
                node=main,
                evidence={"paths": ["/srv/www"]},
                command_id=ids.wipe,
            )
        if self.residue:
            self.rec.record_finding(
                "residue",
                "file",
                "left /tmp/notes.txt",
                node=main,
                evidence={"path": "/tmp/notes.txt", "size": 212},
                command_id=ids.notes,
            )
        if self.spec.residue:
            self.rec.set_residue(self.spec.residue)


def _record_run(db: Database, spec: _Spec, job_id: str, start: datetime) -> str:
    """Write one run of `SPECS` as its story says; return its id."""
    run = _DemoRun(db, spec, job_id, start)
    rec = run.rec
    run.provision()
    if spec.label == "dns-error":
        run.lose_guest_in_setup()
        return rec.run_id
    run.setup()
    ids = run.agent()
    if spec.outcome is None:  # still in its agent phase
        run.snapshot("after_agent", 130)
        return rec.run_id
    if spec.outcome == "cancelled":
        rec.phase_finished("agent", "cancelled", detail="job cancelled by the user", at=run.at(100))
        rec.finish("cancelled")
        return rec.run_id
    rec.phase_finished("agent", at=run.at(130))
    run.snapshot("after_agent", 131)
    ok = spec.outcome == "passed"
    run.verify(ok)
    if ok:
        run.reboot_and_verify()
    run.findings(ids)
    rec.set_state("teardown")
    rec.phase_started("teardown", at=run.at(200))
    rec.phase_finished("teardown", at=run.at(206))
    rec.finish(spec.outcome, reward=1.0 if ok else 0.0)
    return rec.run_id


def seed_demo(db: Database, *, unfinished: bool = True, base: datetime = BASE_TIME) -> DemoData:
    """Write the demo jobs and runs (see the module contract) and return their ids."""
    out = DemoData()
    out.jobs["nightly"] = create_job(db, "nightly-2026-11-20", {"tasks": 3})
    out.jobs["smoke"] = create_job(db, "smoke-2026-11-23", {"tasks": 2})
    engine = writer_engine(engine_of(db))
    for i, spec in enumerate(SPECS):
        if spec.outcome is None and not unfinished:
            continue
        # The unfinished run is live: it started two minutes ago.
        start = (
            base + timedelta(days=spec.day, minutes=7 * i)
            if spec.outcome
            else datetime.now(UTC) - timedelta(seconds=120)
        )
        run_id = _record_run(db, spec, out.jobs[spec.job], start)
        out.runs[spec.label] = run_id
        finished = start + timedelta(seconds={"error": 175, "cancelled": 100}.get(spec.outcome or "", 206))
        with Session(engine) as session, session.begin():
            session.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(
                    created_at=start - timedelta(seconds=5),
                    started_at=start,
                    finished_at=finished if spec.outcome else None,
                )
            )
    return out

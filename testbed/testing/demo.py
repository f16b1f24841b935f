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

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from testbed.db.engine import writer_engine
from testbed.db.models import Run
from testbed.db.recorder import Database, RunRecorder, create_job, engine_of
from testbed.db.records import CommandRecord

BASE_TIME = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
"""Day of the first job's runs; the second job runs three days later."""

OS_RELEASES: dict[str, str] = {
    "debian-12": "Debian GNU/Linux 12 (bookworm)",
    "alpine-3.20": "Alpine Linux v3.20",
    "rocky-9": "Rocky Linux 9.4 (Blue Onyx)",
}
"""Image → the `os_release` recorded for its nodes."""


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


def base_snapshot(image: str, node: str, packages: int = 120) -> dict[str, Any]:
    """A parsed snapshot (the shape `testbed.probes.parse_snapshot` returns) of a freshly
    booted `image` guest named `node`, with `packages` filler packages."""
    pkgs = [
        {"name": f"lib{name}{i}", "version": f"1.{i}.0-1", "arch": "amd64", "status": "ii", "installed": True}
        for i, name in enumerate(["ssl", "c", "z", "xml", "curl", "ffi"] * (packages // 6 + 1))
    ][:packages]
    return {
        "boot": {"boot_id": f"boot-{node}-1"},
        "os": {"os_release": {"PRETTY_NAME": OS_RELEASES.get(image, image)}, "hostname": node, "kernel": {}},
        "packages": {"manager": "dpkg", "packages": pkgs},
        "services": {
            "init": "systemd",
            "failed": [],
            "units": {
                "ssh.service": {"load": "loaded", "active": "active", "sub": "running"},
                "cron.service": {"load": "loaded", "active": "active", "sub": "running"},
            },
            "unit_files": {"ssh.service": "enabled", "cron.service": "enabled"},
        },
        "listening": {"sockets": [{"key": "tcp:0.0.0.0:22", "processes": [{"name": "sshd", "pid": 531}]}]},
        "tmp_files": {
            "entries": {"/tmp": {"type": "dir", "mode": "1777", "owner": "root", "group": "root", "size": 4096}}
        },
        "users": {
            "users": {"root": {"uid": 0, "gid": 0, "home": "/root", "shell": "/bin/bash"}},
            "groups": {"root": {"gid": 0, "members": []}},
        },
        "sysctl": {"values": {"net.ipv4.ip_forward": "0", "vm.swappiness": "60"}},
    }


def evolve(snapshot: dict[str, Any], point: str, *, residue: bool, service: str = "nginx") -> dict[str, Any]:
    """`snapshot` as it looks at `point` of a demo run: setup installs `service`, the agent
    starts it on 8080 (and leaves /tmp/notes.txt when `residue`), a reboot changes the boot id."""
    snap = copy.deepcopy(snapshot)
    if point in ("after_setup", "after_agent", "after_reboot"):
        snap["packages"]["packages"].append(
            {"name": service, "version": "1.22.1-9", "arch": "amd64", "status": "ii", "installed": True}
        )
        snap["services"]["unit_files"][f"{service}.service"] = "disabled"
    if point in ("after_agent", "after_reboot"):
        snap["services"]["unit_files"][f"{service}.service"] = "enabled"
        snap["services"]["units"][f"{service}.service"] = {"load": "loaded", "active": "active", "sub": "running"}
        snap["listening"]["sockets"].append({"key": "tcp:0.0.0.0:8080", "processes": [{"name": service}]})
        if residue:
            snap["tmp_files"]["entries"]["/tmp/notes.txt"] = {
                "type": "file",
                "mode": "0644",
                "owner": "root",
                "group": "root",
                "size": 212,
                "sha256": "9f2c" * 16,
            }
    if point == "after_reboot":
        snap["boot"]["boot_id"] = snap["boot"]["boot_id"].replace("-1", "-2")
    return snap


def _apt_output(package: str) -> str:
    lines = [
        f"Get:{i} http://deb.debian.org/debian bookworm/main amd64 lib{i} 1.{i}-1 [{i * 37} kB]" for i in range(1, 60)
    ]
    lines += [f"Setting up {package} (1.22.1-9) ...", "Processing triggers for man-db (2.11.2-2) ..."]
    return "\n".join(lines) + "\n"


def _record_run(db: Database, spec: _Spec, job_id: str, start: datetime) -> str:
    rec = RunRecorder.create(
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
    nodes = ["web", "client"] if spec.task == "nginx-vhost" else (["ns1"] if spec.task == "dns-resolver" else ["host"])
    service = "nginx" if spec.task == "nginx-vhost" else ("unbound" if spec.task == "dns-resolver" else "auditd")
    main = nodes[0]
    t = start

    def at(seconds: float) -> datetime:
        return start + timedelta(seconds=seconds)

    def command(seconds: float, phase: str, source: str, text: str, **kw: Any) -> int:
        return rec.record_command(
            CommandRecord(
                node=kw.pop("node", main),
                phase=phase,
                source=source,
                command=text,
                started_at=at(seconds),
                duration_ms=kw.pop("duration_ms", 350),
                exit_code=kw.pop("exit_code", 0),
                **kw,
            )
        )

    rec.set_state("provisioning")
    rec.phase_started("provisioning", at=t)
    for i, node in enumerate(nodes):
        rec.add_node(
            node,
            spec.image,
            f"tb-{rec.short_id}-{node}",
            f"10.213.0.{10 + i}",
            os_release=OS_RELEASES[spec.image],
        )
    rec.phase_finished("provisioning", at=at(48))
    if spec.label == "dns-error":
        rec.update_run(error="guest ns1 stopped answering during setup (SSH timeout after 120 s)")
        rec.phase_started("setup", at=at(50))
        command(52, "setup", "harness", f"apt-get install -y {service}", error="connection lost", exit_code=None)
        rec.phase_finished("setup", "error", detail="lost guest ns1", at=at(175))
        rec.finish("error", error="guest ns1 stopped answering during setup (SSH timeout after 120 s)")
        return rec.run_id

    base = {node: base_snapshot(spec.image, node) for node in nodes}
    residue = spec.residue == "yes"
    rec.record_snapshot(main, "before_setup", base[main], taken_at=at(49))
    rec.set_state("setup")
    rec.phase_started("setup", at=at(50))
    command(52, "setup", "harness", f"apt-get install -y {service}", duration_ms=14_200, stdout=_apt_output(service))
    command(67, "setup", "harness", f"systemctl disable --now {service}", duration_ms=600)
    rec.phase_finished("setup", at=at(70))
    rec.record_snapshot(
        main, "after_setup", evolve(base[main], "after_setup", residue=residue, service=service), taken_at=at(71)
    )
    rec.set_state("agent")
    rec.phase_started("agent", at=at(75))
    command(
        80,
        "agent",
        "agent",
        f"systemctl status {service} --no-pager",
        exit_code=3,
        stdout=f"○ {service}.service - inactive (dead)\n",
    )
    command(
        84,
        "agent",
        "agent",
        f"cat > /etc/{service}/sites-enabled/site <<'EOF'\nserver {{\n    listen 8080;\n    root /srv/www;\n}}\nEOF",
        duration_ms=120,
    )
    notes = command(88, "agent", "agent", "echo 'remember: reload after edit' > /tmp/notes.txt", duration_ms=40)
    restart = command(
        90,
        "agent",
        "agent",
        f"systemctl enable --now {service} && systemctl restart {service}",
        impact=["service-restart"],
    )
    wipe = None
    if spec.outcome == "failed":
        wipe = command(
            95, "agent", "agent", "rm -rf /srv/www/*", impact=["file-delete", "recursive-delete"], duration_ms=60
        )
        command(
            97,
            "agent",
            "agent",
            "curl -s localhost:8080",
            node=nodes[-1],
            exit_code=None,
            timed_out=True,
            duration_ms=30_000,
        )
    if spec.outcome is None:
        rec.record_snapshot(
            main, "after_agent", evolve(base[main], "after_agent", residue=residue, service=service), taken_at=at(130)
        )
        return rec.run_id
    if spec.outcome == "cancelled":
        rec.phase_finished("agent", "cancelled", detail="job cancelled by the user", at=at(100))
        rec.finish("cancelled")
        return rec.run_id
    rec.phase_finished("agent", at=at(130))
    rec.record_snapshot(
        main, "after_agent", evolve(base[main], "after_agent", residue=residue, service=service), taken_at=at(131)
    )
    rec.set_state("verify")
    rec.phase_started("verify", at=at(135))
    ok = spec.outcome == "passed"
    command(
        137,
        "verify",
        "harness",
        "curl -sf http://web:8080/" if len(nodes) > 1 else f"systemctl is-active {service}",
        node=nodes[-1],
        exit_code=0 if ok else 7,
        duration_ms=45,
    )
    rec.record_check(
        "R1",
        "passed" if ok else "failed",
        description=f"{service} answers on port 8080",
        point="after_agent",
        node=main,
        detail={"exit_code": 0 if ok else 7, "stdout": "" if ok else "connection refused"},
    )
    rec.record_check(
        "R2",
        "indeterminate" if spec.residue == "undetermined" else "passed",
        description="no unrelated service changed",
        point="after_agent",
        detail="compared unit states" if spec.residue != "undetermined" else "probe output unparseable",
    )
    rec.phase_finished("verify", at=at(140))
    if ok:
        rec.set_state("reboot")
        rec.phase_started("reboot", at=at(141))
        rec.phase_finished("reboot", at=at(192))
        rec.record_snapshot(
            main, "after_reboot", evolve(base[main], "after_reboot", residue=residue, service=service), taken_at=at(193)
        )
        rec.phase_started("verify", at=at(194))
        command(195, "verify", "harness", f"systemctl is-enabled {service}", stdout="enabled\n", duration_ms=30)
        rec.record_check(
            "R3",
            "passed",
            description=f"{service} survives a reboot",
            point="after_reboot",
            node=main,
            detail={"enabled": True},
        )
        rec.phase_finished("verify", at=at(197))
    rec.record_finding(
        "impact",
        "service-restart",
        f"restarted {service}",
        node=main,
        evidence={"command": f"systemctl restart {service}"},
        command_id=restart,
    )
    if wipe is not None:
        rec.record_finding(
            "safety",
            "recursive-delete",
            "deleted the web root's content",
            node=main,
            evidence={"paths": ["/srv/www"]},
            command_id=wipe,
        )
    if residue:
        rec.record_finding(
            "residue",
            "file",
            "left /tmp/notes.txt",
            node=main,
            evidence={"path": "/tmp/notes.txt", "size": 212},
            command_id=notes,
        )
    if spec.residue:
        rec.set_residue(spec.residue)
    rec.set_state("teardown")
    rec.phase_started("teardown", at=at(200))
    rec.phase_finished("teardown", at=at(206))
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

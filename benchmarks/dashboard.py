"""Benchmark the dashboard's server-side time on a SQLite database with 1,000,000 commands.

Builds (or, with `--reuse`, reuses) a database migrated to head with a few hundred runs,
their phases, nodes, snapshots (parsed-snapshot-shaped JSON at every point), checks,
findings attributed to commands and, in bulk, `--commands` commands (about 1.5% of them
high-impact), then times the ASGI app through httpx (no network): the overview, the runs
list (default and filtered/sorted), one run's page (with its trajectory), a task page, the
leaderboard and the API equivalents (the biggest run's whole trajectory included). Each URL gets
one warm-up request and `--repeat` timed ones; the median is printed per URL and the last
line names the slowest (goal: under 300 ms).

Usage: .venv/bin/python benchmarks/dashboard.py [--db PATH] [--commands N] [--runs N] [--repeat N] [--reuse]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from testbed.db.migrate import upgrade
from testbed.db.models import new_id
from testbed.server.dashboard import create_app
from testbed.testing.demo_snapshots import OS_RELEASES, base_snapshot, evolve

GOAL_MS = 300.0
CATEGORIES = ("web", "network", "security", "storage")
TASKS = {
    "web": ("nginx-vhost", "apache-tls", "haproxy-backend"),
    "network": ("dns-resolver", "dhcp-pool", "ntp-sync"),
    "security": ("user-audit", "sshd-hardening", "sudo-policy"),
    "storage": ("lvm-extend", "nfs-export", "logrotate-fix"),
}
IMAGES = ("debian-12", "alpine-3.20", "rocky-9")
AGENTS = ("oracle", "claude", "gpt", "noop")
OUTCOME_WEIGHTS = (("passed", 55), ("failed", 30), ("error", 8), ("cancelled", 3), (None, 4))
PHASES = ("provisioning", "setup", "agent", "verify", "reboot", "verify", "teardown")
POINTS = ("before_setup", "after_setup", "after_agent", "after_reboot")
IMPACT_CLASSES = (["service-restart"], ["file-delete"], ["package-remove"], ["firewall-change", "service-restart"])
VERBS = (
    "cat /etc/nginx/nginx.conf",
    "systemctl status nginx",
    "ls -la /var/www",
    "grep -r listen /etc/nginx",
    "journalctl -u nginx -n 50",
    "ss -tlnp",
    "apt-cache policy nginx",
    "id www-data",
    "df -h",
    "ip addr",
)


def ts(value: datetime) -> str:
    """SQLite storage form of an aware datetime (naive UTC text, as `UTCDateTime` writes it)."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def build(path: Path, n_runs: int, n_commands: int, seed: int = 7) -> dict[str, Any]:
    """Create the benchmark database at `path`; return facts about it (ids, counts)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    upgrade(url)
    rnd = random.Random(seed)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("BEGIN")
    now = datetime.now(UTC).replace(microsecond=0)
    jobs = [(new_id(), f"sweep-{i + 1}", ts(now - timedelta(days=30 - i * 6)), json.dumps({"n": i})) for i in range(5)]
    con.executemany("INSERT INTO jobs (id, name, created_at, config) VALUES (?, ?, ?, ?)", jobs)
    per_run = n_commands // n_runs
    extra = n_commands - per_run * n_runs
    cmd_id = 0
    biggest: tuple[int, str] = (0, "")
    for r in range(n_runs):
        run_id = new_id()
        job = jobs[r * len(jobs) // n_runs]
        category = rnd.choice(CATEGORIES)
        task = rnd.choice(TASKS[category])
        image = rnd.choice(IMAGES)
        outcome = rnd.choices([o for o, _ in OUTCOME_WEIGHTS], [w for _, w in OUTCOME_WEIGHTS])[0]
        start = now - timedelta(days=30) + timedelta(minutes=r * 140)
        duration = rnd.randint(300, 3000)
        finished = start + timedelta(seconds=duration)
        residue = None if outcome in (None, "error", "cancelled") else rnd.choice(["yes", "no", "no", "undetermined"])
        con.execute(
            "INSERT INTO runs (id, job_id, task_id, task_category, variant, image, agent, attempt, state, outcome,"
            " reward, residue, host, created_at, started_at, finished_at, error, config)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, 'lab1', ?, ?, ?, ?, ?)",
            (
                run_id,
                job[0],
                task,
                category,
                image.replace("-", "").replace(".", ""),
                image,
                rnd.choice(AGENTS),
                "finished" if outcome else "agent",
                outcome,
                None if outcome is None else float(outcome == "passed"),
                residue,
                ts(start - timedelta(seconds=3)),
                ts(start),
                ts(finished) if outcome else None,
                "lost guest" if outcome == "error" else None,
                json.dumps({"limits": {"agent_timeout_s": 1800}}),
            ),
        )
        t = start
        for name in PHASES:
            span = timedelta(seconds=duration / len(PHASES))
            con.execute(
                "INSERT INTO phases (run_id, name, started_at, finished_at, status) VALUES (?, ?, ?, ?, ?)",
                (run_id, name, ts(t), ts(t + span), "ok"),
            )
            t += span
        nodes = ["web", "client"]
        for i, node in enumerate(nodes):
            con.execute(
                "INSERT INTO nodes (run_id, name, image, os_release, domain_name, mgmt_ip) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, node, image, OS_RELEASES[image], f"tb-{run_id[:8]}-{node}", f"10.213.{r % 250}.{10 + i}"),
            )
        base = base_snapshot(image, "web", packages=300)
        for k, point in enumerate(POINTS):
            data = base if point == "before_setup" else evolve(base, point, residue=residue == "yes")
            con.execute(
                "INSERT INTO snapshots (run_id, node, point, taken_at, data) VALUES (?, ?, ?, ?, ?)",
                (run_id, "web", point, ts(start + timedelta(seconds=60 * k)), json.dumps(data)),
            )
        count = per_run + (1 if r < extra else 0)
        rows = []
        first_id = cmd_id + 1
        impactful_ids = []
        for seq in range(1, count + 1):
            cmd_id += 1
            phase = (
                "setup"
                if seq <= 20
                else ("agent" if seq <= count - 30 else ("verify" if seq <= count - 10 else "probe"))
            )
            source = "agent" if phase == "agent" else "harness"
            impact = rnd.choice(IMPACT_CLASSES) if phase == "agent" and rnd.random() < 0.015 else []
            if impact:
                impactful_ids.append(cmd_id)
            big = rnd.random() < 0.02
            stdout = (
                ("line of output from a verbose tool\n" * rnd.randint(60, 120))
                if big
                else f"ok {seq}\n" * rnd.randint(0, 4)
            )
            rows.append(
                (
                    cmd_id,
                    run_id,
                    seq,
                    rnd.choice(nodes),
                    phase,
                    source,
                    rnd.choice(VERBS),
                    0 if rnd.random() < 0.9 else 1,
                    stdout,
                    "" if rnd.random() < 0.95 else "warning: something\n",
                    0,
                    0,
                    0,
                    ts(start + timedelta(milliseconds=seq * 300)),
                    rnd.randint(5, 3000),
                    json.dumps(impact),
                    None,
                    None,
                )
            )
        con.executemany(
            "INSERT INTO commands (id, run_id, seq, node, phase, source, command, exit_code, stdout, stderr,"
            " stdout_truncated, stderr_truncated, timed_out, started_at, duration_ms, impact, redacted, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        if count > biggest[0]:
            biggest = (count, run_id)
        for requirement in ("R1", "R2", "R3"):
            status = "passed" if outcome == "passed" else rnd.choice(["passed", "failed", "indeterminate"])
            con.execute(
                "INSERT INTO checks (run_id, requirement, description, point, node, status, detail)"
                " VALUES (?, ?, ?, 'after_agent', 'web', ?, ?)",
                (run_id, requirement, f"requirement {requirement} holds", status, json.dumps({"exit_code": 0})),
            )
        for cid in impactful_ids[:5]:
            con.execute(
                "INSERT INTO findings (run_id, node, kind, category, summary, evidence, command_id)"
                " VALUES (?, 'web', 'impact', 'service-restart', 'restarted a service', ?, ?)",
                (run_id, json.dumps({"command_id": cid}), cid),
            )
        if residue == "yes":
            con.execute(
                "INSERT INTO findings (run_id, node, kind, category, summary, evidence, command_id)"
                " VALUES (?, 'web', 'residue', 'file', 'left /tmp/notes.txt', ?, ?)",
                (run_id, json.dumps({"path": "/tmp/notes.txt"}), first_id + count // 2),
            )
    con.execute("COMMIT")
    con.execute("ANALYZE")
    con.close()
    return {"biggest_run": biggest[1], "commands_in_biggest": biggest[0]}


async def measure(app: Any, paths: list[str], repeat: int) -> dict[str, float]:
    """Median wall-clock milliseconds per path (one warm-up request each, then `repeat`
    timed ones); the process CPU time and the first (cold-cache) request are printed beside
    it, since a busy host inflates the wall-clock figure."""
    out: dict[str, float] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for path in paths:
            start = time.perf_counter()
            response = await client.get(path)
            cold = (time.perf_counter() - start) * 1000
            response.raise_for_status()
            wall, cpu = [], []
            for _ in range(repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                response = await client.get(path)
                wall.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - start_cpu) * 1000)
                response.raise_for_status()
            out[path] = statistics.median(wall)
            print(
                f"{out[path]:8.1f} ms wall {statistics.median(cpu):7.1f} ms cpu (median of {repeat};"
                f" first {cold:6.1f} ms) {len(response.content):>8} B  GET {path}"
            )
    return out


def main() -> int:
    """Build (or reuse) the database, time the pages, print the figures; exit 1 over the goal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/testbed-dashboard-bench.db"))
    parser.add_argument("--commands", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--reuse", action="store_true", help="reuse --db if it exists")
    args = parser.parse_args()
    facts_file = Path(f"{args.db}.json")
    if args.reuse and args.db.is_file() and facts_file.is_file():
        facts = json.loads(facts_file.read_text())
        print(f"reusing {args.db}", file=sys.stderr)
    else:
        start = time.perf_counter()
        facts = build(args.db, args.runs, args.commands)
        facts_file.write_text(json.dumps(facts))
        size = args.db.stat().st_size / 1e6
        print(
            f"built {args.db} ({args.runs} runs, {args.commands} commands, {size:.0f} MB) "
            f"in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
    app = create_app(f"sqlite:///{args.db}")
    run = facts["biggest_run"]
    pages = {
        "overview": "/",
        "runs list": "/runs",
        "runs list, filtered + sorted by duration": "/runs?outcome=passed&sort=duration&size=100",
        f"run detail ({facts['commands_in_biggest']} commands, page 1)": f"/runs/{run}",
        "run detail, last command page": f"/runs/{run}?cpage=99",
        "api overview": "/api/overview",
        "api runs": "/api/runs",
        "api run": f"/api/runs/{run}",
        "tasks": "/tasks",
        "task page": "/tasks/nginx-vhost",
        "leaderboard": "/leaderboard",
        "api trajectory (every agent command)": f"/api/runs/{run}/trajectory",
    }
    times = asyncio.run(measure(app, list(pages.values()), args.repeat))
    worst_name, worst_path = max(pages.items(), key=lambda kv: times[kv[1]])
    worst = times[worst_path]
    verdict = "OK" if worst < GOAL_MS else "OVER GOAL"
    print(f"slowest: {worst:.1f} ms ({worst_name}) — goal < {GOAL_MS:.0f} ms: {verdict}")
    return 0 if worst < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())

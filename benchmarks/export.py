"""Benchmark of `testbed export` on a large SQLite run database.

Creates a SQLite database (migrated to head) holding COMMANDS synthetic commands over a few
hundred runs, plus TURNS model turns per run (an LLM agent's calls: messages, reply, tool
calls, tokens) (bulk `executemany` in one transaction), then, each in its own child process
so that `ru_maxrss` is the peak of that work alone:

1. `export_dataset(..., redact=False)` of the whole database (the figure of the last line);
2. the baseline: the same commands rows fetched with Python's sqlite3 module and handed to
   DuckDB as Arrow record batches, DuckDB writing `commands.parquet` (zstd) itself.
   (DuckDB's own sqlite extension cannot be installed offline; this is the closest
   DuckDB-native path: DuckDB does the Parquet writing, Python only hands it the rows);
3. `export_dataset(..., redact=True)` of the whole database: every text of every table goes
   through the recorder's redactor (`testbed.analysis.redact.Redactor`); its CPU time is
   compared with the baseline's too (goal: within 2x).

Last line: `export N commands: T s, peak M MiB, ratio vs DuckDB R (CPU C) (goal <= 2.0, memory
< 1 GiB) redact_cpu_ratio=X` (the redacted export's CPU time over the baseline's, goal <= 2.0).

Usage: python benchmarks/export.py [--commands N] [--runs R] [--turns T] [--keep DIR [--reuse]]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REDACT_SHARE = 0.05
TURNS_PER_RUN = 10

_COMMANDS = [
    "systemctl status nginx",
    "systemctl restart nginx",
    "cat /etc/nginx/sites-enabled/default",
    "ls -la /var/www/html",
    "apt-get install -y {pkg}",
    "journalctl -u {pkg} --no-pager -n 50",
    "ss -tlnp",
    "ip addr show",
    "grep -n listen /etc/nginx/nginx.conf",
    "sed -i 's/listen 80/listen {port}/' /etc/nginx/sites-enabled/default",
    "curl -s http://localhost:{port}/",
    "df -h",
    "ps aux | grep {pkg}",
    "useradd -m user{n}",
    "chmod 640 /etc/{pkg}/{pkg}.conf",
    "echo 'PASSWORD=hunter{n}x' >> /etc/app.env",
    "mysql -uroot -ps3cr3t{n} -e 'select 1'",
]
_PKGS = ["nginx", "postgresql", "redis", "haproxy", "bind9", "chrony", "ssh", "cron"]
_OUT_LINES = [
    "Reading package lists... Done",
    "Building dependency tree... Done",
    "Setting up {pkg} ({n}.{m}.1-2) ...",
    "● {pkg}.service - {pkg} server",
    "     Active: active (running) since Mon 2024-05-06 10:{m:02d}:{n:02d} UTC; {n}s ago",
    "   Main PID: {pid} ({pkg})",
    'LISTEN 0      511          0.0.0.0:{port}      0.0.0.0:*    users:(("{pkg}",pid={pid},fd=6))',
    "drwxr-xr-x 2 root root 4096 May  6 10:{m:02d} html",
    "-rw-r--r-- 1 root root {pid} May  6 10:{m:02d} index.nginx-debian.html",
    "/dev/vda1        {n}G  {m}G   {port}M  {m}% /",
]


def _ts(value: datetime) -> str:
    """SQLAlchemy's SQLite storage format of UTCDateTime (naive UTC text)."""
    return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def _turn_rows(run_id: str, start: datetime, turns: int, rng: random.Random) -> list[tuple[Any, ...]]:
    """`turns` model turns of one run: each sends the previous command's output and asks for one command."""
    rows = []
    for seq in range(1, turns + 1):
        v = {"pkg": rng.choice(_PKGS), "n": rng.randint(0, 999), "m": rng.randint(0, 59),
             "port": rng.choice([80, 8080, 443, 5432]), "pid": rng.randint(100, 99999)}  # fmt: skip
        command = rng.choice(_COMMANDS).format(**v)
        arguments = json.dumps({"node": "node", "command": command})
        call = {"id": f"call_{seq}", "type": "function", "function": {"name": "run", "arguments": arguments}}
        if seq == 1:
            messages = [{"role": "system", "content": "You are a Linux system administrator. Nodes: node, client."},
                        {"role": "user", "content": f"Make {v['pkg']} listen on port {v['port']}."}]  # fmt: skip
        else:
            output = "\n".join(rng.choice(_OUT_LINES).format(**v) for _ in range(rng.randint(1, 6)))
            messages = [{"role": "tool", "tool_call_id": f"call_{seq - 1}", "content": f"exit 0\n{output}"}]
        response = {"role": "assistant", "content": None, "tool_calls": [call]}
        tool_calls = [{"id": f"call_{seq}", "name": "run", "arguments": arguments, "error": None}]
        prompt = 400 + 150 * seq
        rows.append((run_id, seq, "bench-model", _ts(start + timedelta(seconds=seq * 7)), rng.randint(300, 4000),
                     json.dumps(messages), json.dumps(response), json.dumps(tool_calls), "tool_calls", prompt, 25,
                     prompt + 25, None))  # fmt: skip
    return rows


def create_database(path: Path, commands: int, runs: int, seed: int = 7, turns: int = TURNS_PER_RUN) -> dict[str, Any]:
    """Create and fill the database; return what was inserted."""
    from testbed.db.migrate import upgrade

    url = f"sqlite:///{path}"
    upgrade(url)
    rng = random.Random(seed)
    turn_rng = random.Random(seed + 1)  # its own stream: the other rows are the same whatever --turns
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    t0 = datetime(2024, 5, 6, 10, 0, tzinfo=UTC)
    per_run = commands // runs
    small_runs = max(1, round(runs * REDACT_SHARE))
    con.execute("BEGIN")
    con.executemany(
        "INSERT INTO jobs (id, name, created_at, config) VALUES (?, ?, ?, ?)",
        [("a" * 32, "bulk", _ts(t0), "{}"), ("b" * 32, "sample", _ts(t0), "{}")],
    )
    run_rows, node_rows, snap_rows, check_rows, finding_rows, turn_rows = [], [], [], [], [], []
    for r in range(runs):
        run_id = f"{r:032x}"
        start = t0 + timedelta(minutes=r)
        job = "b" * 32 if r < small_runs else "a" * 32
        outcome = rng.choice(["passed", "passed", "failed", "error"])
        run_rows.append(
            (run_id, job, f"task-{r % 12}", ["services", "web", "storage"][r % 3], "debian12", "debian-12",
             "bench-agent", 1, "finished", outcome, 1.0 if outcome == "passed" else 0.0,
             rng.choice(["yes", "no", "undetermined"]), "lab1", _ts(start), _ts(start), _ts(start + timedelta(
                 seconds=rng.randint(60, 1800))), None, '{"limits": {}}')
        )  # fmt: skip
        for name, release in (("node", "Debian GNU/Linux 12 (bookworm)"), ("client", "Ubuntu 24.04 LTS")):
            node_rows.append((run_id, name, "debian-12", release, f"tb-{run_id[:8]}-{name}", "10.213.0.10"))
        for point in ("before_setup", "after_setup", "after_agent"):
            data = {"packages": {p: f"1.{rng.randint(0, 9)}" for p in _PKGS}, "services": {"nginx": "active"}}
            snap_rows.append((run_id, "node", point, _ts(start), json.dumps(data)))
        check_rows.append((run_id, "R1", "nginx answers", "after_agent", "node", "passed", '{"exit_code": 0}'))
        finding_rows.append((run_id, "node", "residue", "file", "left /tmp/x", '{"path": "/tmp/x"}', None))
        turn_rows += _turn_rows(run_id, start, turns, turn_rng)
    con.executemany(
        "INSERT INTO runs (id, job_id, task_id, task_category, variant, image, agent, attempt, state, outcome, "
        "reward, residue, host, created_at, started_at, finished_at, error, config) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        run_rows,
    )
    con.executemany(
        "INSERT INTO nodes (run_id, name, image, os_release, domain_name, mgmt_ip) VALUES (?, ?, ?, ?, ?, ?)",
        node_rows,
    )
    con.executemany("INSERT INTO snapshots (run_id, node, point, taken_at, data) VALUES (?, ?, ?, ?, ?)", snap_rows)
    con.executemany(
        "INSERT INTO checks (run_id, requirement, description, point, node, status, detail) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        check_rows,
    )
    con.executemany(
        "INSERT INTO findings (run_id, node, kind, category, summary, evidence, command_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        finding_rows,
    )
    con.executemany(
        "INSERT INTO model_turns (run_id, seq, model, started_at, latency_ms, messages, response, tool_calls, "
        "finish_reason, prompt_tokens, completion_tokens, total_tokens, error) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        turn_rows,
    )

    def command_rows() -> Any:
        n_total = 0
        for r in range(runs):
            run_id = f"{r:032x}"
            start = t0 + timedelta(minutes=r)
            count = per_run + (1 if r < commands - per_run * runs else 0)
            for seq in range(1, count + 1):
                n_total += 1
                v = {"pkg": rng.choice(_PKGS), "n": rng.randint(0, 999), "m": rng.randint(0, 59),
                     "port": rng.choice([80, 8080, 443, 5432]), "pid": rng.randint(100, 99999)}  # fmt: skip
                command = rng.choice(_COMMANDS).format(**v)
                if rng.random() < 0.4:
                    stdout = ""
                else:
                    stdout = "\n".join(rng.choice(_OUT_LINES).format(**v) for _ in range(rng.randint(1, 6))) + "\n"
                stderr = "" if rng.random() < 0.9 else f"E: Unable to locate package {v['pkg']}{v['n']}\n"
                exit_code = 0 if not stderr else 100
                impact = '["service-restart"]' if "restart" in command else "[]"
                phase, source = ("agent", "agent") if seq % 10 else ("verify", "harness")
                yield (run_id, seq, rng.choice(["node", "client"]), phase, source, command, exit_code, stdout,
                       stderr, 0, 0, 0, _ts(start + timedelta(milliseconds=seq * 250)), rng.randint(5, 5000),
                       impact, None, None)  # fmt: skip

    con.executemany(
        "INSERT INTO commands (run_id, seq, node, phase, source, command, exit_code, stdout, stderr, "
        "stdout_truncated, stderr_truncated, timed_out, started_at, duration_ms, impact, redacted, error) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        command_rows(),
    )
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return describe_database(path)


def describe_database(path: Path) -> dict[str, Any]:
    """Counts of a database made by `create_database`."""
    con = sqlite3.connect(path)
    try:
        total = con.execute("SELECT count(*) FROM commands").fetchone()[0]
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        turns = con.execute("SELECT count(*) FROM model_turns").fetchone()[0]
    finally:
        con.close()
    return {"commands": total, "runs": runs, "turns": turns, "sample_job": "b" * 32}


# --- child processes ------------------------------------------------------------------------


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_export(db: str, out: str, redact: bool, job: str | None) -> dict[str, Any]:
    from testbed.db.engine import make_engine
    from testbed.db.read import RunFilter
    from testbed.export import export_dataset

    start, cpu = time.perf_counter(), _cpu_s()
    selection = RunFilter(job_id=job or "")
    result = export_dataset(make_engine(f"sqlite:///{db}"), Path(out), selection=selection, redact=redact)
    seconds = time.perf_counter() - start
    rows = result.tables["commands"].rows
    turns = result.tables["model_turns"].rows
    return {"seconds": seconds, "cpu_s": _cpu_s() - cpu, "peak_mib": _peak_mib(), "rows": rows, "turns": turns}


def child_duckdb(db: str, out: str) -> dict[str, Any]:
    import duckdb
    import pyarrow as pa

    start, cpu = time.perf_counter(), _cpu_s()
    con = sqlite3.connect(db, check_same_thread=False)
    cur = con.execute(
        "SELECT id, run_id, seq, node, phase, source, command, exit_code, stdout, stderr, stdout_truncated, "
        "stderr_truncated, timed_out, started_at, duration_ms, impact, error, redacted FROM commands ORDER BY id"
    )
    names = [d[0] for d in cur.description]

    def batches() -> Any:
        while True:
            rows = cur.fetchmany(50_000)
            if not rows:
                return
            yield pa.RecordBatch.from_arrays([pa.array(col) for col in zip(*rows, strict=True)], names=names)

    first = next(batches())
    reader = pa.RecordBatchReader.from_batches(first.schema, _chain(first, batches()))
    duck = duckdb.connect()
    duck.register("commands_src", reader)
    Path(out).mkdir(parents=True, exist_ok=True)
    duck.execute(f"COPY (SELECT * FROM commands_src) TO '{out}/commands.parquet' (FORMAT parquet, COMPRESSION zstd)")
    rows = duck.execute(f"SELECT count(*) FROM read_parquet('{out}/commands.parquet')").fetchone()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "cpu_s": _cpu_s() - cpu, "peak_mib": _peak_mib(), "rows": rows[0] if rows else 0}


def _chain(first: Any, rest: Any) -> Any:
    yield first
    yield from rest


def _run_child(*args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--turns", type=int, default=TURNS_PER_RUN, help="model turns per run")
    parser.add_argument("--keep", type=Path, help="Work in this directory and keep it.")
    parser.add_argument("--reuse", action="store_true", help="With --keep: reuse the database made by a former run.")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "export":
            db, out, redact, job = rest
            res = child_export(db, out, redact == "1", job or None)
        else:
            res = child_duckdb(*rest)
        print(json.dumps(res))
        return

    work = args.keep or Path(tempfile.mkdtemp(prefix="testbed-bench-export-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "bench.db"
    try:
        if args.reuse and db.exists():
            info = describe_database(db)
            print(f"reusing {db}: {info['commands']} commands and {info['turns']} model turns over {info['runs']} runs",
                  flush=True)  # fmt: skip
        else:
            db.unlink(missing_ok=True)
            start = time.perf_counter()
            info = create_database(db, args.commands, args.runs, turns=args.turns)
            print(f"created {info['commands']} commands and {info['turns']} model turns over {info['runs']} runs in "
                  f"{time.perf_counter() - start:.1f} s ({db.stat().st_size / 2**20:.0f} MiB)", flush=True)  # fmt: skip
        ours = _run_child("export", str(db), str(work / "out"), "0", "")
        print(f"testbed export --no-redact: {ours['seconds']:.1f} s wall, {ours['cpu_s']:.1f} s CPU, "
              f"peak {ours['peak_mib']:.0f} MiB, {ours['rows']} commands, {ours['turns']} model turns",
              flush=True)  # fmt: skip
        base = _run_child("duckdb", str(db), str(work / "duck"))
        print(f"DuckDB baseline (sqlite3 rows -> Arrow -> DuckDB COPY TO parquet zstd, commands only): "
              f"{base['seconds']:.1f} s wall, {base['cpu_s']:.1f} s CPU, peak {base['peak_mib']:.0f} MiB",
              flush=True)  # fmt: skip
        red = _run_child("export", str(db), str(work / "out-redacted"), "1", "")
        rate = red["rows"] / red["cpu_s"] if red["cpu_s"] else 0.0
        print(f"testbed export --redact: {red['seconds']:.1f} s wall, {red['cpu_s']:.1f} s CPU = "
              f"{rate:,.0f} commands per CPU second, peak {red['peak_mib']:.0f} MiB", flush=True)  # fmt: skip
        load = os.getloadavg()[0]
        print(f"host load average {load:.1f} on {os.cpu_count()} CPUs: wall times are inflated when it exceeds "
              f"the CPU count; the CPU-time ratio is the stable figure", flush=True)  # fmt: skip
        ratio = ours["seconds"] / base["seconds"]
        cpu_ratio = ours["cpu_s"] / base["cpu_s"]
        redact_ratio = red["cpu_s"] / base["cpu_s"]
        print(f"export {ours['rows']} commands: {ours['seconds']:.1f} s, peak {ours['peak_mib']:.0f} MiB, "
              f"ratio vs DuckDB {ratio:.2f} (CPU {cpu_ratio:.2f}) (goal <= 2.0, memory < 1 GiB) "
              f"redact_cpu_ratio={redact_ratio:.2f}")  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Every family of malformed input, fed to the real command line (`testbed.cli.main`, in
process), is refused cleanly: exit status 2, a message naming the file, field or setting
and the problem, no traceback, and nothing created — the sandbox's files (TESTBED_HOME,
the project root, the working directory, an existing database) and the libvirt test
driver's objects are the same before and after.

Families: invalid UTF-8, deep nesting and alias bombs, bad database URLs, malformed
`TESTBED_*` settings, task files that leave the task directory, absurd limits, tables
`run`/`launch`/`serve` refuse, malformed job files, malformed command-line values and id
prefixes, and missing images or agents.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import libvirt
import pytest
from sqlalchemy import func, select

from testbed.cli import main
from testbed.db.engine import open_database
from testbed.db.models import Job, Run
from testbed.db.read import open_read_only

REPO = Path(__file__).resolve().parents[3]
TASK = "web-port-conflict"
BAD_UTF8 = b"\xff\xfe"
SQLITE_SIDE_FILES = ("-wal", "-shm")


class Sandbox:
    """A project root (copies of images/, topologies/ and one task), a TESTBED_HOME that
    does not exist yet, a working directory and an existing, empty run database."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "root"
        for part in ("images", "topologies"):
            shutil.copytree(REPO / part, self.root / part)
        shutil.copytree(REPO / "tasks" / TASK, self.root / "tasks" / TASK)
        self.task = self.root / "tasks" / TASK
        self.home = tmp / "home"
        self.work = tmp / "work"
        self.work.mkdir()
        (tmp / "afile").write_text("a file, not a directory\n")
        self.db_path = tmp / "db" / "runs.db"
        self.db = f"sqlite:///{self.db_path}"
        open_database(self.db).kw["bind"].dispose()

    def toml(self, old: str, new: str) -> None:
        """Replace `old` (which must occur) by `new` in the task's task.toml."""
        path = self.task / "task.toml"
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))

    def append(self, text: str) -> None:
        with (self.task / "task.toml").open("a") as fh:
            fh.write("\n" + text + "\n")

    def write(self, relative: str, content: bytes | str) -> Path:
        path = self.tmp / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def fill(self, arg: str) -> str:
        return arg.format(task=self.task, root=self.root, tmp=self.tmp, db=self.db)


@dataclass
class Case:
    id: str
    argv: list[str]
    needles: list[str]
    setup: Callable[[Sandbox], object] = lambda sb: None
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes = b""


def run_noop(*extra: str) -> list[str]:
    return ["run", "{task}", "--agent", "noop", *extra]


def deep_json(depth: int = 5000) -> str:
    return "[" * depth + "]" * depth


def deep_yaml(key: str = "nodes") -> str:
    return f"name: deep\n{key}: " + "[" * 1200 + "]" * 1200 + "\n"


ALIAS_BOMB = (
    "name: bomb\n"
    + "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 7))
)

JOB = "name: j\ntasks: [web-port-conflict]\nagent: noop\n"


def job_file(sb: Sandbox, text: str | bytes) -> Path:
    return sb.write("work/job.yaml", text)


# fmt: off
CASES: list[Case] = [
    # --- invalid UTF-8 ------------------------------------------------------------------
    Case("utf8-task-toml-validate", ["task", "validate", "{task}"], ["task.toml", "not UTF-8", "line 1, column"],
         lambda sb: (sb.task / "task.toml").write_bytes(b'id = "x' + BAD_UTF8 + b'"\n')),
    Case("utf8-task-toml-run", run_noop(), ["task.toml", "not UTF-8"],
         lambda sb: (sb.task / "task.toml").write_bytes(BAD_UTF8)),
    Case("utf8-instruction", ["task", "validate", "{task}"], ["instruction.md", "not UTF-8"],
         lambda sb: (sb.task / "instruction.md").write_bytes(b"Fix nginx " + BAD_UTF8)),
    Case("utf8-setup-script", run_noop(), ["setup[0].script", "not UTF-8", "line 2"],
         lambda sb: (sb.task / "setup" / "break.sh").write_bytes(b"#!/bin/sh\necho " + BAD_UTF8)),
    Case("utf8-oracle-script", ["task", "validate", "{task}"], ["oracle.script", "not UTF-8"],
         lambda sb: (sb.task / "solution" / "solve.sh").write_bytes(BAD_UTF8)),
    Case("utf8-topology", run_noop(), ["single.yaml", "not UTF-8"],
         lambda sb: (sb.root / "topologies" / "single.yaml").write_bytes(b"name: " + BAD_UTF8)),
    Case("utf8-image", ["task", "validate", "{task}"], ["debian-12.yaml", "not UTF-8"],
         lambda sb: (sb.root / "images" / "debian-12.yaml").write_bytes(b"name: " + BAD_UTF8)),
    Case("utf8-job", ["launch", "{tmp}/work/job.yaml"], ["job.yaml", "not UTF-8", "line 2"],
         lambda sb: job_file(sb, b"name: j\ntasks: [" + BAD_UTF8 + b"]\n")),
    Case("utf8-replay", [*run_noop(), "--agent", "replay:{tmp}/work/r.jsonl"], ["r.jsonl", "not UTF-8"],
         lambda sb: sb.write("work/r.jsonl", b'{"node": "node", "command": "ls ' + BAD_UTF8 + b'"}\n')),
    Case("utf8-analyze-file", ["analyze", "commands", "{tmp}/work/log.jsonl"], ["log.jsonl", "not UTF-8"],
         lambda sb: sb.write("work/log.jsonl", b'{"command": "\xc3"}\n')),
    Case("utf8-analyze-stdin", ["analyze", "commands", "-"], ["-", "not UTF-8", "line 1, column 14"],
         stdin=b'{"command": "' + BAD_UTF8 + b'"}\n'),
    Case("utf8-lab-topology", ["lab", "up", "{tmp}/work/t.yaml"], ["t.yaml", "not UTF-8"],
         lambda sb: sb.write("work/t.yaml", b"name: t\nnodes: [{name: " + BAD_UTF8 + b"}]\n")),
    # --- deep nesting and alias bombs ---------------------------------------------------
    Case("deep-task-toml", ["task", "validate", "{task}"], ["task.toml", "nested deeper than 32"],
         lambda sb: sb.append("deep = " + deep_json(3000))),
    Case("deep-task-toml-dotted", ["task", "validate", "{task}"], ["task.toml", "nested deeper than 32"],
         lambda sb: sb.append("[safety]\n" + ".".join(["x"] * 40) + " = 1")),
    Case("deep-topology", run_noop(), ["single.yaml", "nested deeper than 32"],
         lambda sb: (sb.root / "topologies" / "single.yaml").write_text(deep_yaml())),
    Case("deep-image", ["task", "validate", "{task}"], ["debian-12.yaml", "nested deeper than 32"],
         lambda sb: (sb.root / "images" / "debian-12.yaml").write_text(deep_yaml("os"))),
    Case("deep-job", ["launch", "{tmp}/work/job.yaml"], ["job.yaml", "nested deeper than 32"],
         lambda sb: job_file(sb, deep_yaml("tasks"))),
    Case("alias-bomb-job", ["launch", "{tmp}/work/job.yaml"], ["job.yaml", "more than 200000 values"],
         lambda sb: job_file(sb, ALIAS_BOMB)),
    Case("deep-replay", [*run_noop(), "--agent", "replay:{tmp}/work/r.jsonl"], ["r.jsonl", "line 1", "nested deeper"],
         lambda sb: sb.write("work/r.jsonl", deep_json())),
    Case("deep-analyze", ["analyze", "commands", "{tmp}/work/log.jsonl"], ["log.jsonl", "line 2", "nested deeper"],
         lambda sb: sb.write("work/log.jsonl", '{"command": "ls"}\n' + deep_json(50) + "\n")),
    # --- database URLs ------------------------------------------------------------------
    Case("db-nonsense-run", run_noop("--db", "nonsense"), ["--db", "'nonsense' is not a database URL"]),
    Case("db-sqlite-relative-run", run_noop("--db", "sqlite://relative"), ["--db", "a SQLite URL has no host"]),
    Case("db-pg-port-text", run_noop("--db", "postgresql://u:secret@localhost:notaport/db"),
         ["--db", "is not a database URL", "u:***@"]),
    Case("db-pg-port-range", run_noop("--db", "postgresql://u@localhost:99999/db"), ["--db", "port 99999"]),
    Case("db-pg-port-zero", run_noop("--db", "postgresql://u@localhost:0/db"), ["--db", "port 0"]),
    Case("db-mysql", run_noop("--db", "mysql://u@localhost/db"), ["--db", "unsupported database 'mysql'"]),
    Case("db-driver", run_noop("--db", "postgresql+psycopg2://localhost/db"), ["--db", "driver 'psycopg2'"]),
    Case("db-sqlite-under-file", run_noop("--db", "sqlite:///{tmp}/afile/x.db"), ["--db", "afile is not a directory"]),
    Case("db-sqlite-is-dir", run_noop("--db", "sqlite:///{tmp}/work"), ["--db", "not a regular file"]),
    Case("db-upgrade-nonsense", ["db", "upgrade", "--db", "nonsense"], ["--db", "not a database URL"]),
    Case("db-current-port", ["db", "current", "--db", "postgresql://u@localhost:x/db"], ["--db", "not a database"]),
    Case("db-runs-list", ["runs", "list", "--db", "sqlite://relative"], ["--db", "no host"]),
    Case("db-launch", ["launch", "--task", TASK, "--agent", "noop", "--db", "nonsense"], ["--db", "not a database"]),
    Case("db-jobs-cancel", ["jobs", "cancel", "abcd", "--db", "mysql://x/y"], ["--db", "unsupported database"]),
    Case("db-env", run_noop(), ["TESTBED_DB", "not a database URL"], env={"TESTBED_DB": "nonsense"}),
    Case("db-export", ["export", "{tmp}/work/out", "--db", "nonsense"], ["--db", "not a database URL"]),
    Case("db-reap", ["reap", "--db", "nonsense"], ["--db", "not a database URL"]),
    Case("db-serve", ["serve", "--db", "postgresql://u@localhost:99999/db"], ["--db", "port 99999"]),
    # --- TESTBED_* settings -------------------------------------------------------------
    Case("env-budget-word", run_noop(), ["TESTBED_MEMORY_BUDGET_MB", "'lots' is not a whole number"],
         env={"TESTBED_MEMORY_BUDGET_MB": "lots"}),
    Case("env-budget-negative", run_noop(), ["TESTBED_MEMORY_BUDGET_MB", "'-5'"],
         env={"TESTBED_MEMORY_BUDGET_MB": "-5"}),
    Case("env-budget-fraction", run_noop(), ["TESTBED_MEMORY_BUDGET_MB", "'1.5'"],
         env={"TESTBED_MEMORY_BUDGET_MB": "1.5"}),
    Case("env-budget-huge", run_noop(), ["TESTBED_MEMORY_BUDGET_MB", "outside 128.."],
         env={"TESTBED_MEMORY_BUDGET_MB": "99999999999"}),
    Case("env-pool-garbage", run_noop(), ["TESTBED_SUBNET_POOL", "not an IPv4 network"],
         env={"TESTBED_SUBNET_POOL": "garbage"}),
    Case("env-pool-small", run_noop(), ["TESTBED_SUBNET_POOL", "smaller than one /24"],
         env={"TESTBED_SUBNET_POOL": "10.0.0.0/30"}),
    Case("env-pool-public", run_noop(), ["TESTBED_SUBNET_POOL", "not a private range"],
         env={"TESTBED_SUBNET_POOL": "8.8.0.0/16"}),
    Case("env-pool-host-bits", run_noop(), ["TESTBED_SUBNET_POOL", "has host bits set"],
         env={"TESTBED_SUBNET_POOL": "10.0.0.1/16"}),
    Case("env-accel", run_noop(), ["TESTBED_ACCEL", "'fast' is not kvm or tcg"], env={"TESTBED_ACCEL": "fast"}),
    Case("env-host-guard", run_noop(), ["TESTBED_HOST_GUARD", "'maybe'"], env={"TESTBED_HOST_GUARD": "maybe"}),
    Case("env-ssh-config", run_noop(), ["TESTBED_SSH_CONFIG", "no such file"],
         env={"TESTBED_SSH_CONFIG": "{tmp}/no-such-config"}),
    Case("env-remote-cache", run_noop(), ["TESTBED_REMOTE_CACHE", "not an absolute path"],
         env={"TESTBED_REMOTE_CACHE": "relative/cache"}),
    Case("env-libvirt-uri", run_noop(), ["TESTBED_LIBVIRT_URI", "not a libvirt URI"],
         env={"TESTBED_LIBVIRT_URI": "not a uri"}),
    Case("env-libvirt-port", run_noop(), ["TESTBED_LIBVIRT_URI", "bad port"],
         env={"TESTBED_LIBVIRT_URI": "qemu+ssh://root@lab2:port/system"}),
    Case("env-home-file", run_noop(), ["TESTBED_HOME", "afile exists and is not a directory"],
         env={"TESTBED_HOME": "{tmp}/afile"}),
    Case("env-root-missing", run_noop(), ["TESTBED_ROOT", "is not a directory"], env={"TESTBED_ROOT": "{tmp}/nowhere"}),
    Case("env-budget-launch", ["launch", "--task", TASK, "--agent", "noop"], ["TESTBED_MEMORY_BUDGET_MB"],
         env={"TESTBED_MEMORY_BUDGET_MB": "lots"}),
    Case("env-accel-lab-up", ["lab", "up", "single"], ["TESTBED_ACCEL"], env={"TESTBED_ACCEL": "fast"}),
    Case("env-pool-serve", ["serve", "--token", "t"], ["TESTBED_SUBNET_POOL"], env={"TESTBED_SUBNET_POOL": "x"}),
    # --- files a task names must stay inside its directory ------------------------------
    Case("path-absolute", ["task", "validate", "{task}"], ["setup[0].script", "'/etc/shadow' is an absolute path"],
         lambda sb: sb.toml('script = "setup/break.sh"', 'script = "/etc/shadow"')),
    Case("path-dotdot", run_noop(), ["setup[0].script", "leads outside the task directory"],
         lambda sb: sb.toml('script = "setup/break.sh"', 'script = "../../../etc/passwd"')),
    Case("path-symlink-file", ["task", "validate", "{task}"], ["setup[0].script", "leads outside", "/etc/passwd"],
         lambda sb: ((sb.task / "setup" / "break.sh").unlink(),
                     (sb.task / "setup" / "break.sh").symlink_to("/etc/passwd"))),
    Case("path-symlink-dir", ["task", "validate", "{task}"], ["setup[0].script", "leads outside"],
         lambda sb: (shutil.rmtree(sb.task / "setup"), (sb.task / "setup").symlink_to("/etc"),
                     sb.toml('script = "setup/break.sh"', 'script = "setup/hostname"'))),
    Case("path-oracle", ["task", "validate", "{task}"], ["oracle.script", "leads outside"],
         lambda sb: sb.toml('script = "solution/solve.sh"', 'script = "../web-port-conflict/../../x.sh"')),
    Case("path-oracle-steps", ["task", "validate", "{task}"], ["oracle.steps[0].script", "absolute path"],
         lambda sb: sb.toml('[oracle]\nnode = "node"\nscript = "solution/solve.sh"',
                            '[[oracle.steps]]\nnode = "node"\nscript = "/etc/shadow"')),
    Case("path-instruction-symlink", ["task", "validate", "{task}"], ["instruction.md", "leads outside"],
         lambda sb: ((sb.task / "instruction.md").unlink(), (sb.task / "instruction.md").symlink_to("/etc/hostname"))),
    Case("path-topology", ["task", "validate", "{task}"], ["topology", "leads outside"],
         lambda sb: sb.toml('topology = "single"', 'topology = "../../topologies/single.yaml"')),
    Case("path-missing", ["task", "validate", "{task}"], ["setup[0].script", "no such file"],
         lambda sb: sb.toml('script = "setup/break.sh"', 'script = "setup/missing.sh"')),
    Case("path-fifo", ["task", "validate", "{task}"], ["setup[0].script", "not a regular file"],
         lambda sb: ((sb.task / "setup" / "break.sh").unlink(), os.mkfifo(sb.task / "setup" / "break.sh"))),
    # --- limits: finite and capped ------------------------------------------------------
    Case("limit-inf", ["task", "validate", "{task}"], ["limits.agent_time_s", "finite number (got inf)"],
         lambda sb: sb.toml("agent_time_s = 1200", "agent_time_s = inf")),
    Case("limit-nan-run", run_noop(), ["limits.agent_time_s", "finite number"],
         lambda sb: sb.toml("agent_time_s = 1200", "agent_time_s = nan")),
    Case("limit-negative", ["task", "validate", "{task}"], ["limits.agent_time_s", "greater than 0"],
         lambda sb: sb.toml("agent_time_s = 1200", "agent_time_s = -5")),
    Case("limit-cap", ["task", "validate", "{task}"], ["limits.agent_time_s", "less than or equal to 86400"],
         lambda sb: sb.toml("agent_time_s = 1200", "agent_time_s = 1e9")),
    Case("limit-command-inf", run_noop(), ["limits.command_time_s", "finite"],
         lambda sb: sb.toml("command_time_s = 120", "command_time_s = -inf")),
    Case("limit-bool", ["task", "validate", "{task}"], ["limits.max_commands", "valid integer (got True)"],
         lambda sb: sb.toml("command_time_s = 120", "command_time_s = 120\nmax_commands = true")),
    Case("limit-commands-cap", ["task", "validate", "{task}"], ["limits.max_commands", "100000"],
         lambda sb: sb.toml("command_time_s = 120", "command_time_s = 120\nmax_commands = 10000000")),
    Case("check-timeout-inf", ["task", "validate", "{task}"], ["checks[R1].timeout_s", "finite"],
         lambda sb: sb.toml("timeout_s = 120", "timeout_s = inf")),
    Case("check-exit-range", ["task", "validate", "{task}"], ["checks[R1].expect_exit", "255"],
         lambda sb: sb.toml("timeout_s = 120", "timeout_s = 120\nexpect_exit = 999")),
    Case("expected-port", ["task", "validate", "{task}"], ["expected.ports[0]", "65535"],
         lambda sb: sb.toml("ports = [80]", "ports = [70000]")),
    # --- what run, launch and serve refuse, task validate refuses -----------------------
    Case("safety-rule", ["task", "validate", "{task}"], ["task.toml", "safety", "unknown rule 'nonsense'"],
         lambda sb: sb.append('[safety]\nblock = ["nonsense"]')),
    Case("safety-type", ["task", "validate", "{task}"], ["safety.allow_power", "valid boolean"],
         lambda sb: sb.append('[safety]\nallow_power = "sometimes"')),
    Case("actions-placeholder", ["task", "validate", "{task}"], ["actions.restart.command", "placeholder(s) unit"],
         lambda sb: sb.append('[actions.restart]\ncommand = "systemctl restart {unit}"')),
    Case("actions-keyword", ["task", "validate", "{task}"], ["actions.x.parameters", "unsupported JSON-schema"],
         lambda sb: sb.append('[actions.x]\ncommand = "true"\nparameters = { type = "object", oneOf = [] }')),
    Case("actions-node", ["task", "validate", "{task}"], ["actions.x.node", "undefined node 'ghost'"],
         lambda sb: sb.append('[actions.x]\ncommand = "true"\nnode = "ghost"')),
    Case("actions-missing", ["task", "validate", "{task}"], ["actions.x.command", "missing"],
         lambda sb: sb.append('[actions.x]\ndescription = "no command"')),
    Case("actions-positional", run_noop(), ["actions.x.command", "placeholders must be named"],
         lambda sb: sb.append('[actions.x]\ncommand = "echo {}"')),
    Case("reward-inf", ["task", "validate", "{task}"], ["reward.success", "finite"],
         lambda sb: sb.append("[reward]\nsuccess = inf")),
    Case("reward-regex", ["task", "validate", "{task}"], ["reward.diagnostic_patterns[0]", "regular expression"],
         lambda sb: sb.append('[reward]\ndiagnostic_patterns = ["("]')),
    Case("variant-unknown", ["task", "validate", "{task}"], ["images", "unknown image variant 'solaris'"],
         lambda sb: sb.toml('images = ["debian-12",', 'images = ["debian-12", "solaris",')),
    Case("oracle-both", ["task", "validate", "{task}"], ["oracle", "not both"],
         lambda sb: sb.toml('script = "solution/solve.sh"', 'script = "solution/solve.sh"\n[[oracle.steps]]\n'
                            'node = "node"\ncommand = "true"')),
    Case("check-by-index", ["task", "validate", "{task}"], ["checks[2].id", "missing"],
         lambda sb: sb.append('[[checks]]\ndescription = "no id, no command"\nnode = "node"')),
    Case("inline-topology", ["task", "validate", "{task}"], ["topology.nodes[node].memory", "(got 'lots')"],
         lambda sb: sb.toml('topology = "single"', 'topology = { nodes = [{ name = "node", memory = "lots" }] }')),
    Case("variant-run", run_noop("--image", "solaris"), ["images", "does not support image 'solaris'"]),
    # --- job files ----------------------------------------------------------------------
    Case("job-agent", ["launch", "{tmp}/work/job.yaml"], ["job.yaml", "agent", "unknown agent 'bogus'"],
         lambda sb: job_file(sb, "name: j\ntasks: [web-port-conflict]\nagent: bogus\n")),
    Case("job-attempts", ["launch", "{tmp}/work/job.yaml"], ["job.yaml", "attempts", "greater than or equal to 1"],
         lambda sb: job_file(sb, JOB + "attempts: 0\n")),
    Case("job-limit-inf", ["launch", "{tmp}/work/job.yaml"], ["limits.agent_time_s", "finite"],
         lambda sb: job_file(sb, JOB + "limits: {agent_time_s: .inf}\n")),
    Case("job-retry-nan", ["launch", "{tmp}/work/job.yaml"], ["retry.factor", "finite"],
         lambda sb: job_file(sb, JOB + "retry: {factor: .nan}\n")),
    Case("job-no-task", ["launch", "{tmp}/work/job.yaml"], ["tasks[0]", "matches no task"],
         lambda sb: job_file(sb, "name: j\ntasks: [no-such-task]\n")),
    Case("job-hosts", ["launch", "{tmp}/work/job.yaml"], ["duplicate host name 'a'"],
         lambda sb: job_file(sb, JOB + "hosts: [{name: a}, {name: a}]\n")),
    Case("job-timeout-cap", ["launch", "{tmp}/work/job.yaml"], ["run_timeout_s", "less than or equal"],
         lambda sb: job_file(sb, JOB + "run_timeout_s: 1.0e+12\n")),
    Case("job-slots", ["launch", "{tmp}/work/job.yaml"], ["hosts[a].vm_slots", "(got 'many')"],
         lambda sb: job_file(sb, JOB + "hosts: [{name: a, vm_slots: many}]\n")),
    Case("job-task-utf8", ["launch", "{tmp}/work/job.yaml"], ["task.toml", "not UTF-8"],
         lambda sb: (job_file(sb, JOB), (sb.task / "task.toml").write_bytes(BAD_UTF8))),
    # --- command-line values and ids ----------------------------------------------------
    Case("opt-lease-nan", ["launch", "--task", TASK, "--lease-ttl", "nan"], ["--lease-ttl", "nan"]),
    Case("opt-exec-timeout", ["lab", "exec", "x", "y", "--timeout", "inf", "--", "ls"], ["--timeout", "inf"]),
    Case("opt-dashboard-port", ["dashboard", "--port", "99999", "--db", "{db}"], ["Invalid value for '--port'"]),
    Case("opt-serve-port", ["serve", "--port", "0"], ["--port"]),
    Case("opt-serve-timeout", ["serve", "--idle-timeout", "nan"], ["--idle-timeout", "nan"]),
    Case("opt-serve-task", ["serve", "--task", "../../etc"], ["--task", "no task '../../etc'"]),
    Case("id-cancel-percent", ["jobs", "cancel", "%", "--db", "{db}"], ["'%' is too short"]),
    Case("id-runs-show-short", ["runs", "show", "ab", "--db", "{db}"], ["run id", "too short"]),
    Case("id-runs-show-unknown", ["runs", "show", "zzzz", "--db", "{db}"], ["run id", "no run matches 'zzzz'"]),
    Case("id-resume-literal", ["launch", "--resume", "ab%_", "--db", "{db}"], ["JOB_ID", "no job matches 'ab%_'"]),
    Case("id-resume-missing-db", ["launch", "--resume", "abcd"], ["TESTBED_HOME", "no database file"]),
    Case("id-runs-job", ["runs", "list", "--job", "a%", "--db", "{db}"], ["--job", "too short"]),
    Case("id-export-job", ["export", "{tmp}/work/out", "--job", "_", "--db", "{db}"], ["--job", "too short"]),
    Case("out-report-ext", ["report", "--out", "{tmp}/work/r.txt", "--db", "{db}"], ["r.txt"]),
    Case("out-report-under-file", ["report", "--out", "{tmp}/afile/r.md", "--db", "{db}"],
         ["--out", "not a directory"]),
    Case("out-export-file", ["export", "{tmp}/afile", "--db", "{db}"], ["afile", "not a directory"]),
    Case("out-export-since", ["export", "{tmp}/work/out", "--since", "garbage", "--db", "{db}"], ["--since"]),
    Case("opt-outcome", ["runs", "list", "--outcome", "bogus", "--db", "{db}"], ["--outcome", "'bogus'"]),
    Case("analyze-line", ["analyze", "commands", "{tmp}/work/log.jsonl"], ["log.jsonl", "line 2", "not valid JSON"],
         lambda sb: sb.write("work/log.jsonl", '{"command": "ls"}\n{"command": \n')),
    Case("replay-object", [*run_noop(), "--agent", "replay:{tmp}/work/r.jsonl"], ["line 1", "expected an object"],
         lambda sb: sb.write("work/r.jsonl", '["node", "ls"]\n')),
    Case("replay-node", [*run_noop(), "--agent", "replay:{tmp}/work/r.jsonl"], ["unknown node 'ghost'"],
         lambda sb: sb.write("work/r.jsonl", '{"node": "ghost", "command": "ls"}\n')),
    Case("agent-unknown", ["run", "{task}", "--agent", "bogus"], ["--agent", "unknown agent 'bogus'"]),
    Case("agent-openai-option", ["run", "{task}", "--agent", "openai:m?bogus=1"], ["bogus"]),
    Case("image-missing-run", run_noop(), ["nodes[node].image", "not in the image cache", "testbed image build"]),
    Case("image-missing-launch", ["launch", "--task", TASK, "--agent", "noop"], ["not in the image cache"]),
    Case("image-missing-lab", ["lab", "up", "single"], ["nodes[node].image", "not in the image cache"]),
    Case("lab-name", ["lab", "up", "single", "--name", "../x"], ["--name", "'../x' is not a lab name"]),
    Case("launch-both", ["launch", "{tmp}/work/job.yaml", "--resume", "abcd"], ["--resume", "not both"],
         lambda sb: job_file(sb, JOB)),
    Case("task-dir-missing", ["task", "validate", "{tmp}/nothere"], ["nothere", "not a task directory"]),
    Case("runs-missing-db", ["runs", "list"], ["TESTBED_HOME", "no database file"]),
]
# fmt: on


def _tree(path: Path) -> list[tuple[str, str, int, int]]:
    """Every path under `path` with its kind, size and modification time (a file that is
    rewritten, even with the same size, shows)."""
    out = []
    for p in sorted(path.rglob("*")):
        st = p.lstat()
        kind = "link" if p.is_symlink() else "dir" if p.is_dir() else "file"
        if p.name.endswith(SQLITE_SIDE_FILES):
            continue  # SQLite's own -wal/-shm beside an existing database, made by any reader
        if kind == "dir":
            out.append((str(p.relative_to(path)), kind, 0, 0))
        else:
            out.append((str(p.relative_to(path)), kind, st.st_size, st.st_mtime_ns))
    return out


def _libvirt_objects() -> tuple[list[str], list[str], list[str]]:
    conn = libvirt.open("test:///default")
    try:
        return (
            sorted(d.name() for d in conn.listAllDomains()),
            sorted(n.name() for n in conn.listAllNetworks()),
            sorted(p.name() for p in conn.listAllStoragePools()),
        )
    finally:
        conn.close()


def _rows(db: str) -> tuple[int, int]:
    sessions = open_read_only(db)
    with sessions() as session:
        counts = (session.scalar(select(func.count()).select_from(Run)) or 0,
                  session.scalar(select(func.count()).select_from(Job)) or 0)  # fmt: skip
    sessions.kw["bind"].dispose()
    return counts


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    for name in list(os.environ):
        if name.startswith("TESTBED_") or name in ("OPENAI_API_KEY",):
            monkeypatch.delenv(name)
    sb = Sandbox(tmp_path)
    monkeypatch.setenv("TESTBED_HOME", str(sb.home))
    monkeypatch.setenv("TESTBED_ROOT", str(sb.root))
    monkeypatch.setenv("TESTBED_LIBVIRT_URI", "test:///default")
    monkeypatch.setenv("TESTBED_ACCEL", "tcg")
    monkeypatch.setenv("TESTBED_HOST_GUARD", "0")
    monkeypatch.chdir(sb.work)
    yield sb


def invoke(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           stdin: bytes = b"") -> tuple[int, str]:  # fmt: skip
    """Run `testbed ARGV` through `testbed.cli.main`; (exit status, stdout + stderr)."""
    monkeypatch.setattr(sys, "argv", ["testbed", *argv])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), captured.out + captured.err


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_exit_2_named_and_creates_nothing(
    case: Case, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case.setup(sandbox)
    for name, value in case.env.items():
        monkeypatch.setenv(name, sandbox.fill(value))
    before = (_rows(sandbox.db), _libvirt_objects())
    files_before = _tree(sandbox.tmp)
    code, output = invoke([sandbox.fill(a) for a in case.argv], monkeypatch, capsys, case.stdin)
    assert code == 2, output
    assert "Traceback" not in output
    for needle in case.needles:
        assert sandbox.fill(needle) in output, (needle, output)
    files_after = _tree(sandbox.tmp)
    changed = sorted(set(files_before) ^ set(files_after))
    assert not changed, (changed, output)
    assert (_rows(sandbox.db), _libvirt_objects()) == before, output
    assert not sandbox.home.exists()

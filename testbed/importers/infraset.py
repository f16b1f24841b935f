"""Reading a checkout of the InfraSet study's published dataset (the `jobs/` tree).

Layout read (one trial = one run):

    jobs/<job>/<timestamp>/<task-variant>/<trial>/
        result.json                       id, task_name, trial_name, agent model, verifier
                                          rewards, exception_info, started_at/finished_at
        agent/executor-commands.jsonl     one `requested` record per command, then its
                                          `completed` one (same command_id and attempt):
                                          node, command, duration_ms, return_code, stdout, stderr
        verifier/global-observations.json the collector's snapshots: before_prepare,
                                          after_prepare, after_executor (each: nodes →
                                          observations), else
        collector/attempts/NN/snapshots/{before-prepare,after-prepare,after-executor}.json

Contracts:

- A trial is a directory holding `result.json` whose object has `task_name` and, as
  `trial_name`, the directory's own name; task- and job-level `result.json` files
  (aggregates) are not trials.
- Commands keep the order of their `requested` records. A completion with `return_code`
  -1, or a `requested` record without a completion, is a transport failure (exit status
  None, `error` says which).
- Outcome: `exception_info` set → `error`; verifier reward 1.0 → `passed`; else `failed`.
- `task_name` `<task>-bash-<os>-<n>` becomes task `<task>` and variant `<os>`.
- Bad input — a file that is not JSON, a JSON line that is not an object, a record
  without `command_id`, a path that is not a checkout — raises
  `InputError(file, field, problem)` naming the file (and line).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed.errors import InputError

TRANSPORT_RC = -1
TASK_NAME_RE = re.compile(r"^(?P<task>.+?)-bash-(?P<os>[a-z][a-z0-9.]*(?:-[a-z][a-z0-9.]*)*?)-(?P<n>\d+)$")
PHASE_FILES = {"before_prepare": "before-prepare.json", "after_prepare": "after-prepare.json",
               "after_executor": "after-executor.json"}  # fmt: skip


@dataclass(frozen=True)
class StudyCommand:
    """One agent command of a trial, requested and (maybe) completed."""

    command_id: str
    node: str | None
    command: str
    requested_at: datetime
    duration_ms: int = 0
    return_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None


@dataclass
class Trial:
    """One trial of the study: a run."""

    trial_id: str
    path: Path
    relpath: str
    task_name: str
    task_id: str
    variant: str | None
    agent: str
    reward: float | None
    outcome: str
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None
    commands: list[StudyCommand] = field(default_factory=list)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)
    """phase (before_prepare, after_prepare, after_executor) → the collector's snapshot."""
    snapshot_source: str | None = None


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise InputError(path, None, f"not valid JSON: {exc}") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot be read: {exc.strerror or exc}") from None


def parse_time(value: Any, path: Path, name: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InputError(path, name, f"not an ISO 8601 time: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def split_task_name(task_name: str) -> tuple[str, str | None]:
    """(task, variant) of a study task name (`<task>-bash-<os>-<n>`), else (name, None)."""
    m = TASK_NAME_RE.match(task_name)
    return (m.group("task"), m.group("os")) if m else (task_name, None)


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InputError(path, f"line {n}", f"not valid JSON: {exc}") from None
        if not isinstance(record, dict) or not isinstance(record.get("command_id"), str):
            raise InputError(path, f"line {n}", "not a command record (an object with a string command_id)")
        out.append(record)
    return out


def _completion(req: dict[str, Any], done: dict[str, Any] | None, path: Path) -> dict[str, Any]:
    if done is None:
        return {"error": "transport failure: requested, no completion recorded"}
    rc = done.get("return_code")
    if not isinstance(rc, int) or isinstance(rc, bool) or rc == TRANSPORT_RC:
        why = "return code -1" if rc == TRANSPORT_RC else f"outcome {done.get('outcome')!r}, no return code"
        return {"error": f"transport failure: {why}", "duration_ms": _ms(done)}
    return {"return_code": rc, "stdout": str(done.get("stdout") or ""), "stderr": str(done.get("stderr") or ""),
            "duration_ms": _ms(done)}  # fmt: skip


def _ms(record: dict[str, Any]) -> int:
    value = record.get("duration_ms")
    return max(0, int(value)) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def read_commands(path: Path) -> list[StudyCommand]:
    """The trial's commands in request order (see the module contract)."""
    records = _records(path)
    completions: dict[tuple[Any, str], dict[str, Any]] = {}
    for r in records:
        if r.get("outcome") != "requested":
            completions.setdefault((r.get("executor_attempt"), r["command_id"]), r)
    out = []
    for n, r in enumerate(records, 1):
        if r.get("outcome") != "requested":
            continue
        when = parse_time(r.get("timestamp"), path, f"line {n}: timestamp") or datetime.fromtimestamp(0, UTC)
        done = _completion(r, completions.get((r.get("executor_attempt"), r["command_id"])), path)
        node = r.get("node")
        out.append(StudyCommand(r["command_id"], str(node) if node else None, str(r.get("command") or ""), when,
                                **done))  # fmt: skip
    return out


def read_snapshots(trial_dir: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """(phase → snapshot, where they came from): global-observations.json, else the
    collector's snapshot files of the last attempt."""
    global_file = trial_dir / "verifier" / "global-observations.json"
    if global_file.is_file():
        data = read_json(global_file)
        if not isinstance(data, dict):
            raise InputError(global_file, None, "not a JSON object")
        found = {p: data[p] for p in PHASE_FILES if isinstance(data.get(p), dict)}
        if found:
            return found, "verifier/global-observations.json"
    attempts = sorted((trial_dir / "collector" / "attempts").glob("*/snapshots"))
    if not attempts:
        return {}, None
    found = {}
    for phase, name in PHASE_FILES.items():
        file = attempts[-1] / name
        if file.is_file():
            data = read_json(file)
            if isinstance(data, dict):
                found[phase] = data
    return found, str(attempts[-1].relative_to(trial_dir)) if found else None


def _outcome(result: dict[str, Any]) -> tuple[str, float | None, str | None]:
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    reward = rewards.get("reward")
    reward = float(reward) if isinstance(reward, int | float) and not isinstance(reward, bool) else None
    exception = result.get("exception_info")
    if exception:
        text = exception.get("exception_message") if isinstance(exception, dict) else None
        return "error", reward, f"study harness exception: {text or json.dumps(exception)[:500]}"
    return ("passed" if reward == 1.0 else "failed"), reward, None


def read_trial(trial_dir: Path, root: Path, result: dict[str, Any]) -> Trial:
    """One trial from its directory and parsed `result.json`."""
    path = trial_dir / "result.json"
    trial_id = result.get("id") or result.get("trial_name")
    if not isinstance(trial_id, str) or not trial_id:
        raise InputError(path, "id", "missing: a trial needs an id")
    task_name = str(result["task_name"])
    task_id, variant = split_task_name(task_name)
    model = ((result.get("config") or {}).get("agent") or {}).get("model_name") or "unknown"
    outcome, reward, error = _outcome(result)
    commands_file = trial_dir / "agent" / "executor-commands.jsonl"
    snapshots, source = read_snapshots(trial_dir)
    return Trial(
        trial_id=trial_id,
        path=trial_dir,
        relpath=str(trial_dir.relative_to(root)),
        task_name=task_name,
        task_id=task_id,
        variant=variant,
        agent=f"infraset:{model}",
        reward=reward,
        outcome=outcome,
        error=error,
        started_at=parse_time(result.get("started_at"), path, "started_at"),
        finished_at=parse_time(result.get("finished_at"), path, "finished_at"),
        commands=read_commands(commands_file) if commands_file.is_file() else [],
        snapshots=snapshots,
        snapshot_source=source,
    )


def find_trials(root: Path) -> list[Trial]:
    """Every trial under `root/jobs` (sorted by path); `InputError` when `root` is not a
    checkout of the dataset or a trial's files are bad."""
    jobs = root / "jobs"
    if not jobs.is_dir():
        raise InputError(root, None, "not a checkout of the InfraSet dataset: no jobs/ directory")
    trials = []
    for path in sorted(jobs.rglob("result.json")):
        result = read_json(path)
        if isinstance(result, dict) and result.get("trial_name") == path.parent.name and "task_name" in result:
            trials.append(read_trial(path.parent, root, result))
    return trials

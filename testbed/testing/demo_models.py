"""A model-evaluation demo: two LLM agents and the oracle on two starter tasks, written
through `RunRecorder` and `ModelTurnWriter` as the runner and the `openai:` agent write them.

Contract: `seed_models(db)` writes a pilot job (2 runs, on the first version of
web-port-conflict) and a model-evaluation job whose matrix is agent x task x release x
attempt: agents `openai:gpt-4.1-mini` (priced, with reasoning text), `openai:qwen2.5-coder-7b`
(local, unpriced) and `oracle`; tasks web-port-conflict (debian-12, ubuntu-24.04) and
disk-full (debian-12); 2 attempts — 18 runs. LLM runs store every model turn (text,
reasoning, tool call, tokens, latency, cost) and the command each call ran; every run
stores its task record (`config["task"]`, web-port-conflict changed between the jobs),
phases, snapshots at every point, checks, impact findings from `testbed.analysis.classify`
and residue found by the real residue engine (`find_residue`, so findings carry the
attribution evidence). Outcomes: passes, failures (one only after the reboot), and one
harness error (the endpoint went down). Timestamps are pinned to fixed days after
`base`. Returns `ModelDemo` (job ids by name, run ids by label `agent/task/image/attempt`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from testbed.agents.turns import ModelTurnWriter, TurnRecord, turn_cost
from testbed.analysis import classify
from testbed.analysis.residue import find_residue, record_residue
from testbed.analysis.residue.stored import load_residue_inputs
from testbed.db.engine import writer_engine
from testbed.db.models import Run
from testbed.db.recorder import Database, RunRecorder, create_job, engine_of
from testbed.db.records import CommandRecord
from testbed.model.task import Expected
from testbed.model.vocab import Outcome, Phase, SnapshotPoint
from testbed.testing.demo_snapshots import OS_RELEASES, base_snapshot
from testbed.testing.demo_stories import CATEGORY, ORACLE_COMMANDS, STORIES, TASKS, Step, Story

BASE_TIME = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
"""Start of the model-evaluation job; the pilot ran a day earlier."""


@dataclass(frozen=True)
class Model:
    """How a demo model behaves: prices (USD per 1M tokens) and latency."""

    name: str
    price_in: float | None
    price_out: float | None
    latency_ms: int
    reasoning: bool


MODELS = {
    "openai:gpt-4.1-mini": Model("gpt-4.1-mini", 0.4, 1.6, 1900, True),
    "openai:qwen2.5-coder-7b": Model("qwen2.5-coder-7b", None, None, 850, False),
}
AGENTS = (*MODELS, "oracle")
CELLS = (("web-port-conflict", "debian-12"), ("web-port-conflict", "ubuntu-24.04"), ("disk-full", "debian-12"))
PLAN: dict[tuple[str, str, str], tuple[str, str]] = {
    ("openai:gpt-4.1-mini", "web-port-conflict", "debian-12"): ("passed", "passed+notes"),
    ("openai:gpt-4.1-mini", "web-port-conflict", "ubuntu-24.04"): ("passed", "failed"),
    ("openai:gpt-4.1-mini", "disk-full", "debian-12"): ("passed", "passed"),
    ("openai:qwen2.5-coder-7b", "web-port-conflict", "debian-12"): ("failed", "passed"),
    ("openai:qwen2.5-coder-7b", "web-port-conflict", "ubuntu-24.04"): ("error", "failed"),
    ("openai:qwen2.5-coder-7b", "disk-full", "debian-12"): ("failed", "passed"),
}
"""(LLM agent, task, image) → how attempts 1 and 2 go (keys of `STORIES`)."""

EXPECTED = {
    "web-port-conflict": Expected(units=["nginx.service", "legacy-http.service"], ports=[80]),
    "disk-full": Expected(paths=["/var/lib/appdata/*"], units=["app-writer.service"]),
}
SERVICES = {"web-port-conflict": ("legacy-http", "nginx"), "disk-full": (None, "app-writer")}
"""Task → (the unit in the way, the unit that must run)."""

SYSTEM_PROMPT = "You are a Linux system administrator working on the lab's machines through the `run` tool."


@dataclass
class ModelDemo:
    """Ids written by `seed_models`: jobs by name, runs by `agent/task/image/attempt`."""

    jobs: dict[str, str] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)


def _unit(active: str) -> dict[str, str]:
    return {"load": "loaded", "active": active, "sub": "running" if active == "active" else "dead"}


def _snapshot(task: str, image: str, point: str, *, fixed: bool, reboot_undoes: bool, leaves: list[str]) -> Any:
    """The node's parsed snapshot at `point` (see `demo_snapshots.base_snapshot`)."""
    snap = base_snapshot(image, "node", packages=30)
    blocker, service = SERVICES[task]
    working = fixed and point in (SnapshotPoint.AFTER_AGENT, SnapshotPoint.AFTER_REBOOT)
    if point == SnapshotPoint.AFTER_REBOOT and reboot_undoes:
        working = False
        snap["boot"]["boot_id"] = "boot-node-2"
    units, files = snap["services"]["units"], snap["services"]["unit_files"]
    if point != SnapshotPoint.BEFORE_SETUP:
        units[f"{service}.service"] = _unit("active" if working else "failed")
        files[f"{service}.service"] = "enabled"
        if blocker:
            units[f"{blocker}.service"] = _unit("inactive" if working else "active")
            files[f"{blocker}.service"] = "disabled" if working else "enabled"
            owner = "nginx" if working else "python3"
            snap["listening"]["sockets"].append({"key": "tcp:0.0.0.0:80", "processes": [{"name": owner}]})
    if point in (SnapshotPoint.AFTER_AGENT, SnapshotPoint.AFTER_REBOOT):
        for path in leaves:
            snap["tmp_files"]["entries"][path] = {"type": "file", "mode": "0644", "owner": "root", "group": "root",
                                                  "size": 1180, "sha256": "4b1e" * 16}  # fmt: skip
    return snap


class _Run:
    """One demo run being written, its clock in seconds after `start`."""

    def __init__(self, db: Database, job_id: str, agent: str, cell: tuple[str, str], attempt: int,
                 start: datetime, record: dict[str, Any]) -> None:  # fmt: skip
        self.db, self.start, self.agent = db, start, agent
        self.task, self.image = cell
        self.record = record
        self.rec = RunRecorder.create(
            db, task_id=self.task, agent=agent, variant=self.image, image=self.image, attempt=attempt,
            job_id=job_id, host="lab1 qemu:///system", task_category=CATEGORY[self.task],
            config={"limits": {"agent_time_s": 1200}, "task": record},
        )  # fmt: skip
        self.clock = 0.0

    def at(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)

    def phase(self, name: str, seconds: float, status: str = "ok", detail: str | None = None) -> None:
        self.rec.phase_started(name, at=self.at(self.clock))
        self.clock += seconds
        self.rec.phase_finished(name, status, detail=detail, at=self.at(self.clock))

    def command(self, phase: str, source: str, text: str, **kw: Any) -> int:
        duration = kw.pop("duration_ms", 240)
        impact = classify(text) if source == "agent" else []
        cid = self.rec.record_command(
            CommandRecord(node="node", phase=phase, source=source, command=text, started_at=self.at(self.clock),
                          duration_ms=duration, impact=impact, **kw)
        )  # fmt: skip
        self.clock += duration / 1000
        for cls in impact:
            self.rec.record_finding("impact", cls, f"{cls}: {text[:200]}", node="node", command_id=cid,
                                    evidence={"command": text})  # fmt: skip
        return cid

    def snapshot(self, point: str, **kw: Any) -> None:
        self.phase(Phase.snapshot(SnapshotPoint(point)), 4.0)
        data = _snapshot(self.task, self.image, point, **kw)
        self.rec.record_snapshot("node", point, data, taken_at=self.at(self.clock))

    def prepare(self) -> None:
        self.rec.set_state("provisioning")
        self.phase(Phase.PROVISIONING, 38.0)
        self.rec.add_node("node", self.image, f"tb-{self.rec.short_id}-node", "10.213.0.10",
                          os_release=OS_RELEASES[self.image])  # fmt: skip
        self.snapshot(SnapshotPoint.BEFORE_SETUP, fixed=False, reboot_undoes=False, leaves=[])
        self.rec.set_state("setup")
        self.rec.phase_started(Phase.SETUP, at=self.at(self.clock))
        self.command("setup", "harness", "bash /tmp/testbed-setup/break.sh", duration_ms=6200)
        self.rec.phase_finished(Phase.SETUP, at=self.at(self.clock))
        self.snapshot(SnapshotPoint.AFTER_SETUP, fixed=False, reboot_undoes=False, leaves=[])


def _tool_call(n: int, step: Step) -> tuple[dict[str, Any], dict[str, Any]]:
    arguments = json.dumps({"node": "node", "command": step.command})
    call = {"id": f"call_{n}", "type": "function", "function": {"name": "run", "arguments": arguments}}
    return call, {"id": f"call_{n}", "name": "run", "arguments": arguments, "error": None}


def _turn(run: _Run, model: Model, n: int, messages: list[dict[str, Any]], step: Step | None,
          final: str | None, error: str | None, context: int) -> tuple[TurnRecord, str | None]:  # fmt: skip
    """Turn `n`: its record and the id of its tool call (None when it asks for nothing)."""
    started = run.at(run.clock)
    latency = model.latency_ms + 53 * n
    run.clock += latency / 1000 + 0.02
    if error is not None:
        return TurnRecord(model.name, started, latency, messages, None, error=error), None
    response: dict[str, Any] = {"role": "assistant", "content": final if step is None else step.text}
    if model.reasoning and step is not None and step.reasoning:
        response["reasoning_content"] = step.reasoning
    stored: list[dict[str, Any]] = []
    call_id = None
    if step is not None:
        call, parsed = _tool_call(n, step)
        response["tool_calls"], stored, call_id = [call], [parsed], call["id"]
    completion = 24 + len(json.dumps(response)) // 4
    usage = {"prompt_tokens": context, "completion_tokens": completion, "total_tokens": context + completion}
    record = TurnRecord(model.name, started, latency, messages, response, stored,
                        "tool_calls" if step else "stop", usage, cost_usd=turn_cost(usage, model.price_in,
                                                                                     model.price_out))  # fmt: skip
    return record, call_id


def _agent_llm(run: _Run, story: Story) -> list[str]:
    """The model's turns and the commands they ran; returns the files left in /tmp."""
    model, writer = MODELS[run.agent], ModelTurnWriter(run.rec)
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": run.record["instruction"]}]  # fmt: skip
    context = 410 + len(run.record["instruction"]) // 4
    leaves: list[str] = []
    steps: list[Step | None] = [*story.steps, None]
    for n, step in enumerate(steps, start=1):
        error = story.endpoint_error if story.endpoint_error and step is None else None
        turn, call_id = _turn(run, model, n, messages, step, story.final, error, context)
        writer.write(turn)
        if step is None or call_id is None:
            break
        run.clock += 0.05
        run.command("agent", "agent", step.command, exit_code=step.exit_code, stdout=step.stdout,
                    duration_ms=step.duration_ms)  # fmt: skip
        leaves.extend(step.leaves)
        result = f"exit status {step.exit_code}\n{step.stdout}"
        messages = [{"role": "tool", "tool_call_id": call_id, "content": result}]
        context += (turn.usage.get("completion_tokens") or 0) + len(result) // 4 + 12
        run.clock += 0.1
    return leaves


def _verify(run: _Run, point: str, results: dict[str, str]) -> None:
    checks = {c["id"]: c for c in run.record["checks"]}
    for req, status in results.items():
        run.command("verify", "harness", f"# check {req}", exit_code=0 if status == "passed" else 1, duration_ms=90)
        run.rec.record_check(req, status, description=checks.get(req, {}).get("description"), point=point,
                             node="node", detail={"exit_code": 0 if status == "passed" else 1})  # fmt: skip


def _finish(run: _Run, story: Story | None, leaves: list[str]) -> str:
    """Snapshots, verification, reboot, residue and teardown; returns the outcome."""
    fixed = story is None or story.checks.get("R1") == "passed"
    reboot_undoes = bool(story and "failed" in story.reboot_checks.values())
    kw = {"fixed": fixed, "reboot_undoes": reboot_undoes, "leaves": leaves}
    run.snapshot(SnapshotPoint.AFTER_AGENT, **kw)
    run.rec.set_state("verify")
    run.rec.phase_started(Phase.VERIFY, at=run.at(run.clock))
    results = story.checks if story else {c["id"]: "passed" for c in run.record["checks"]}
    _verify(run, SnapshotPoint.AFTER_AGENT, results)
    run.rec.phase_finished(Phase.VERIFY, at=run.at(run.clock))
    after_reboot = story.reboot_checks if story else ({k: "passed" for k in results} if run.task == "web-port-conflict"
                                                       else {})  # fmt: skip
    if after_reboot:
        run.rec.set_state("reboot")
        run.phase(Phase.REBOOT, 41.0)
        run.snapshot(SnapshotPoint.AFTER_REBOOT, **kw)
        run.rec.phase_started(Phase.VERIFY_AFTER_REBOOT, at=run.at(run.clock))
        _verify(run, SnapshotPoint.AFTER_REBOOT, after_reboot)
        run.rec.phase_finished(Phase.VERIFY_AFTER_REBOOT, at=run.at(run.clock))
    with Session(engine_of(run.db)) as session:
        snapshots, commands = load_residue_inputs(session, run.rec.run_id)
    record_residue(run.rec, find_residue(snapshots, commands, EXPECTED[run.task], required=()))
    run.phase(Phase.RESIDUE, 1.5)
    ok = all(s == "passed" for s in [*results.values(), *after_reboot.values()])
    return Outcome.PASSED if ok else Outcome.FAILED


def _record(db: Database, job_id: str, agent: str, cell: tuple[str, str], attempt: int, how: str,
            start: datetime, record: dict[str, Any]) -> str:  # fmt: skip
    run = _Run(db, job_id, agent, cell, attempt, start, record)
    run.prepare()
    run.rec.set_state("agent")
    run.rec.phase_started(Phase.AGENT, at=run.at(run.clock))
    story = STORIES[(run.task, how)] if agent in MODELS else None
    if story is None:
        for text in ORACLE_COMMANDS[run.task]:
            run.command("agent", "agent", text, duration_ms=700)
        leaves: list[str] = []
    else:
        leaves = _agent_llm(run, story)
    if story is not None and story.endpoint_error:
        run.rec.phase_finished(Phase.AGENT, "error", detail=story.endpoint_error, at=run.at(run.clock))
        run.phase(Phase.TEARDOWN, 5.0)
        run.rec.finish(Outcome.ERROR, error=story.endpoint_error)
        return _pin(db, run)
    run.rec.phase_finished(Phase.AGENT, at=run.at(run.clock))
    outcome = _finish(run, story, leaves)
    run.rec.set_state("teardown")
    run.phase(Phase.TEARDOWN, 5.0)
    run.rec.finish(outcome, reward=1.0 if outcome == Outcome.PASSED else 0.0)
    return _pin(db, run)


def _pin(db: Database, run: _Run) -> str:
    with Session(writer_engine(engine_of(db))) as session, session.begin():
        session.execute(
            update(Run)
            .where(Run.id == run.rec.run_id)
            .values(created_at=run.start - timedelta(seconds=3), started_at=run.start, finished_at=run.at(run.clock))
        )
    return run.rec.run_id


def seed_models(db: Database, *, base: datetime = BASE_TIME) -> ModelDemo:
    """Write the pilot and model-evaluation jobs (see the module contract)."""
    out = ModelDemo()
    spec = {"agents": list(AGENTS), "attempts": 2, "tasks": sorted(TASKS), "images": "all"}
    out.jobs["pilot"] = create_job(db, "model-eval-pilot", {"spec": {**spec, "agents": [AGENTS[0], "oracle"]}})
    out.jobs["eval"] = create_job(db, "model-eval", {"spec": spec})
    web_v1, web_v2 = TASKS["web-port-conflict"]
    pilot = base - timedelta(days=1)
    for i, agent in enumerate((AGENTS[0], "oracle")):
        run_id = _record(db, out.jobs["pilot"], agent, CELLS[0], 1, "passed", pilot + timedelta(minutes=9 * i), web_v1)
        out.runs[f"pilot/{agent}"] = run_id
    slot = 0
    for agent in AGENTS:
        for cell in CELLS:
            record = web_v2 if cell[0] == "web-port-conflict" else TASKS[cell[0]][0]
            for attempt in (1, 2):
                how = PLAN[(agent, *cell)][attempt - 1] if agent in MODELS else "oracle"
                start = base + timedelta(minutes=6 * slot)
                slot += 1
                run_id = _record(db, out.jobs["eval"], agent, cell, attempt, how, start, record)
                out.runs[f"{agent}/{cell[0]}/{cell[1]}/{attempt}"] = run_id
    return out

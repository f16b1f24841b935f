"""The `trajectories` table: one chat-format conversation per run, LLM runs from their
stored model turns, other runs rebuilt from their commands in the same shape; split,
release, --passed-only, redaction; and every exported table (empty ones too) loads with
`datasets.load_dataset` from the export directory, offline, through the card's configs."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.turns import ModelTurnWriter, TurnRecord
from testbed.db.engine import open_database
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord
from testbed.export import TABLE_NAMES, export_dataset

ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2024, 5, 6, 10, 0, tzinfo=UTC)
SECRET = "s3cr3tPass42"


def _call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"node": "node", "command": command})
    return {"id": call_id, "type": "function", "function": {"name": "run", "arguments": arguments}}


def llm_run(db: sessionmaker[Session]) -> str:
    """Two model turns stored as the openai agent stores them (the agent's own writer)."""
    rec = RunRecorder.create(db, task_id="web-port-conflict", agent="openai:qwen", image="debian-12")
    rec.add_node("node", "debian-12", os_release="Debian GNU/Linux 12 (bookworm)")
    assistant = {"role": "assistant", "content": "Looking.", "tool_calls": [_call("c1", "ss -ltnp")]}
    writer = ModelTurnWriter(rec)
    writer.write(
        TurnRecord(
            "qwen", T0, 900,
            [{"role": "system", "content": "You are a Linux system administrator."},
             {"role": "user", "content": "nginx cannot start."}],
            {**assistant, "reasoning_content": "Check who holds port 80."},
        )
    )  # fmt: skip
    writer.write(
        TurnRecord(
            "qwen", T0 + timedelta(seconds=5), 700,
            [assistant, {"role": "tool", "tool_call_id": "c1", "content": "node: node\nexit status: 0\nstdout:\n..."}],
            {"role": "assistant", "content": "legacy-http holds port 80. Done.", "refusal": None},
        )
    )  # fmt: skip
    rec.finish("passed", reward=1.0)
    return rec.run_id


def command_run(
    db: sessionmaker[Session], outcome: str, agent: str = "oracle", command: str = "systemctl stop x"
) -> str:
    rec = RunRecorder.create(db, task_id="web-port-conflict", agent=agent, image="debian-12")
    rec.add_node("node", "debian-12", os_release="Debian GNU/Linux 12 (bookworm)")
    for seq, (text, code) in enumerate([("systemctl status nginx", 3), (command, 0)], 1):
        rec.record_command(
            CommandRecord(node="node", phase="agent", source="agent", command=text, exit_code=code,
                          stdout=f"out {seq}\n", started_at=T0, duration_ms=10)
        )  # fmt: skip
    rec.record_command(
        CommandRecord(node="node", phase="verify", source="harness", command="systemctl is-active nginx",
                      started_at=T0, duration_ms=5, exit_code=0)
    )  # fmt: skip
    rec.finish(outcome, reward=1.0 if outcome == "passed" else 0.0)
    return rec.run_id


@pytest.fixture
def db(tmp_path: Path) -> sessionmaker[Session]:
    return open_database(f"sqlite:///{tmp_path / 'runs.db'}")


def rows(path: Path) -> dict[str, dict[str, Any]]:
    return {r["run_id"]: r for r in pq.read_table(path).to_pylist()}


def test_llm_and_command_runs_have_one_shape(db: sessionmaker[Session], tmp_path: Path) -> None:
    llm, oracle = llm_run(db), command_run(db, "passed")
    export_dataset(db, tmp_path / "out", tasks_dir=ROOT / "tasks")
    got = rows(tmp_path / "out" / "trajectories.parquet")
    a, b = got[llm], got[oracle]
    assert a["source"] == "model_turns" and b["source"] == "commands"
    assert [m["role"] for m in a["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert a["messages"][2]["reasoning"] == "Check who holds port 80."
    assert a["messages"][2]["tool_calls"][0]["function"] == {
        "name": "run",
        "arguments": _call("c1", "ss -ltnp")["function"]["arguments"],
    }
    assert a["messages"][4]["content"] == "legacy-http holds port 80. Done." and a["turns"] == 2
    assert [m["role"] for m in b["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    instruction = (ROOT / "tasks" / "web-port-conflict" / "instruction.md").read_text()
    assert b["messages"][1]["content"] == instruction and "Nodes: node." in b["messages"][0]["content"]
    call = b["messages"][2]["tool_calls"][0]
    assert call["id"] == "call_1" and json.loads(call["function"]["arguments"]) == {
        "node": "node",
        "command": "systemctl status nginx",
    }
    assert b["messages"][3]["tool_call_id"] == "call_1" and "exit status: 3" in b["messages"][3]["content"]
    assert "out 2" in b["messages"][5]["content"]  # harness rows (verify) are not the agent's
    for r in (a, b):
        assert [m["role"] for m in r["prompt"]] == ["system", "user"] and r["prompt"] + r["completion"] == r["messages"]
        assert r["split"] == "train" and r["release"] == "Debian GNU/Linux 12 (bookworm)" and r["passed"] is True


def test_passed_only_and_redaction(db: sessionmaker[Session], tmp_path: Path) -> None:
    passed = command_run(db, "passed", command=f"mysql -uroot -p{SECRET} -e 'select 1'")
    failed = command_run(db, "failed", agent="replay:x.jsonl")
    result = export_dataset(db, tmp_path / "sft", passed_only=True)
    assert set(rows(tmp_path / "sft" / "trajectories.parquet")) == {passed}
    assert result.tables["runs"].rows == 2  # only the trajectories table is filtered
    row = rows(tmp_path / "sft" / "trajectories.parquet")[passed]
    text = json.dumps(row["messages"])
    assert SECRET not in text and "[REDACTED" in text and row["redacted"]
    assert result.tables["trajectories"].rows_redacted == 1
    everything = rows(export_dataset(db, tmp_path / "all").out_dir / "trajectories.parquet")
    assert set(everything) == {passed, failed} and everything[failed]["passed"] is False
    assert everything[failed]["messages"][1]["content"] == ""  # no tasks dir: no instruction known


def test_card_is_a_hub_card(db: sessionmaker[Session], tmp_path: Path) -> None:
    command_run(db, "passed")
    export_dataset(db, tmp_path / "out", license="cc-by-4.0")
    text = (tmp_path / "out" / "README.md").read_text()
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["license"] == "cc-by-4.0" and front["pretty_name"]
    assert "reinforcement-learning" in front["task_categories"] and front["size_categories"] == ["n<1K"]
    configs = {c["config_name"]: c for c in front["configs"]}
    empty = ["snapshots", "checks", "findings", "model_turns", "egress"]
    assert list(configs) == [t for t in TABLE_NAMES if t not in empty]
    assert [n for n, c in configs.items() if c.get("default")] == ["trajectories"]
    assert "the empty ones (snapshots, checks, findings, model_turns, egress)" in text
    assert "| `messages` | `list<message>` | no |" in text


@pytest.mark.parametrize("populated", [True, False])
def test_every_table_loads_with_datasets(
    db: sessionmaker[Session], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, populated: bool
) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if populated:
        llm_run(db)
        command_run(db, "failed")
    out = tmp_path / "ds"
    result = export_dataset(db, out, tasks_dir=ROOT / "tasks")
    cache = str(tmp_path / "cache")
    front = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    configs = [c["config_name"] for c in front.get("configs") or []]
    for table in TABLE_NAMES:
        if not result.tables[table].rows:
            assert table not in configs, table  # datasets cannot load a split of no rows
            assert pq.read_metadata(out / f"{table}.parquet").num_rows == 0
            continue
        loaded = datasets.load_dataset(os.fspath(out), table, cache_dir=cache)["train"]
        assert loaded.num_rows == result.tables[table].rows, table
        assert table in configs
    if populated:
        default = datasets.load_dataset(os.fspath(out), cache_dir=cache, split="train")
        assert "messages" in default.column_names and default.num_rows == 2
        first = default[0]
        assert first["messages"][0]["role"] == "system" and isinstance(first["reward"], float)
        assert set(configs) == set(TABLE_NAMES) - {"snapshots", "checks", "findings", "egress"}
    else:
        assert configs == []

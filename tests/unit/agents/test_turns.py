"""Model turns stored through the run's recorder: numbering, errors, cost."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from testbed.agents.turns import ModelTurnWriter, TurnRecord, turn_cost
from testbed.db.engine import open_database
from testbed.db.models import ModelTurn
from testbed.db.recorder import RunRecorder

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_turn_cost() -> None:
    usage = {"prompt_tokens": 2_000_000, "completion_tokens": 500_000, "total_tokens": 2_500_000}
    assert turn_cost(usage, None, None) is None
    assert turn_cost(usage, 0.15, 0.6) == pytest.approx(0.3 + 0.3)
    assert turn_cost(usage, 1.0, None) == pytest.approx(2.0)
    assert turn_cost({}, 1.0, 1.0) is None  # no tokens reported: unknown, not free
    assert turn_cost({"prompt_tokens": 10}, 1.0, 2.0) is None


def test_writer_numbers_turns_stores_errors_and_cost_and_continues(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    recorder = RunRecorder.create(db, task_id="t", agent="openai:m")
    writer = ModelTurnWriter(recorder)
    reply = {"role": "assistant", "content": "ok", "reasoning_content": "thinking\x00 aloud"}
    usage = {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010}
    writer.write(TurnRecord("m", T0, 12, [{"role": "user", "content": "hi"}], reply, usage=usage, cost_usd=0.25))
    writer.write(TurnRecord("m", T0, 30_000, [], None, error="model endpoint http://x failed: HTTP 503"))
    ModelTurnWriter(recorder).write(TurnRecord("m", T0, 5, [], {"role": "assistant", "content": "again"}))
    with db() as s:
        turns = s.scalars(select(ModelTurn).where(ModelTurn.run_id == recorder.run_id).order_by(ModelTurn.seq)).all()
        assert [t.seq for t in turns] == [1, 2, 3]  # a second writer continues after the stored turns
        assert turns[0].response["reasoning_content"] == "thinking\ufffd aloud"  # NUL made storable
        assert turns[0].cost_usd == 0.25 and turns[0].total_tokens == 1010
        assert turns[1].error is not None and "HTTP 503" in turns[1].error and turns[1].response is None
        assert turns[1].cost_usd is None and turns[1].prompt_tokens is None and turns[1].latency_ms == 30_000

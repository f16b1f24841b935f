"""`testbed.testing.demo_models`: the model-evaluation demo holds what its contract says,
written through the recorder (read back through the read model)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sqlalchemy import func, select

from testbed.db.engine import open_database
from testbed.db.models import Finding, ModelTurn, Run
from testbed.db.read.tasks import task_page
from testbed.db.read.trajectory import CommandStep, trajectory
from testbed.testing.demo_models import AGENTS, CELLS, seed_models


def test_seed_models(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'm.db'}")
    demo = seed_models(db)
    assert len(demo.runs) == 2 + len(AGENTS) * len(CELLS) * 2 == 20
    with db() as s:
        runs = list(s.scalars(select(Run)))
        outcomes = Counter((r.agent, r.outcome) for r in runs)
        assert outcomes[("oracle", "passed")] == 7 and outcomes[("openai:qwen2.5-coder-7b", "error")] == 1
        assert outcomes[("openai:gpt-4.1-mini", "failed")] == 1
        assert {r.job_id for r in runs} == set(demo.jobs.values())
        llm_runs = {r.id for r in runs if r.agent.startswith("openai:")}
        with_turns = set(s.scalars(select(ModelTurn.run_id).distinct()))
        assert with_turns == llm_runs
        priced = s.scalar(select(func.count()).select_from(ModelTurn).where(ModelTurn.cost_usd.is_not(None)))
        assert priced and priced == s.scalar(
            select(func.count()).select_from(ModelTurn).where(ModelTurn.model == "gpt-4.1-mini")
        )
        # Residue comes from the real engine: attributed, with the changes in its evidence.
        residue = list(s.scalars(select(Finding).where(Finding.kind == "residue")))
        assert residue and all(f.command_id is not None and f.evidence["changes"] for f in residue)
        error_run = demo.runs["openai:qwen2.5-coder-7b/web-port-conflict/ubuntu-24.04/1"]
        t = trajectory(s, error_run)
        assert t.steps[-1].kind == "turn" and t.steps[-1].turn.error and t.run.outcome == "error"
        failed = trajectory(s, demo.runs["openai:gpt-4.1-mini/web-port-conflict/ubuntu-24.04/2"])
        assert any("kill -9" in st.command.command for st in failed.steps if isinstance(st, CommandStep))
        assert [c.status for c in failed.checks if c.point == "after_reboot"] == ["failed", "failed"]
        assert len(task_page(s, "web-port-conflict").versions) == 2

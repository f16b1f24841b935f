"""`testbed.db.read.leaderboard`: agents compared over one selection of runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.turns import ModelTurnWriter, TurnRecord
from testbed.db.read.filters import RunFilter
from testbed.db.read.leaderboard import ALL, leaderboard
from testbed.db.read.rates import wilson_interval
from tests.unit.db.conftest import T0, Seeder


def _turn(tokens: int, cost: float) -> TurnRecord:
    return TurnRecord("m", T0, 100, [], {"role": "assistant"}, usage={"total_tokens": tokens}, cost_usd=cost)


@pytest.fixture
def board(sessions: sessionmaker[Session], seed: Seeder) -> None:
    """Agent `llm` on three cells, `oracle` on one (see the asserts)."""
    plan = [  # (task, image, outcome, agent seconds, residue, impactful, (tokens, cost))
        ("t1", "debian-12", "passed", 10, "yes", True, (100, 0.01)),
        ("t1", "debian-12", "failed", 20, "no", False, None),
        ("t1", "ubuntu-24.04", "passed", 30, "no", True, (200, 0.02)),
        ("t1", "ubuntu-24.04", "passed", 40, None, False, None),
        ("t2", "debian-12", "error", 50, None, False, None),
        ("t2", "debian-12", "cancelled", 60, None, True, None),
    ]
    for i, (task, image, outcome, seconds, residue, impactful, turn) in enumerate(plan):
        rec = seed.run(
            task=task,
            image=image,
            outcome=outcome,
            agent="llm",
            duration_s=seconds,
            category="web" if task == "t1" else "db",
            start=T0 + timedelta(minutes=i),
            commands=(),
        )
        seed.command(rec, "rm -rf /x" if impactful else "ls", impact=["recursive_force_remove"] if impactful else [])
        if residue:
            rec.set_residue(residue)
        if turn:
            ModelTurnWriter(rec).write(_turn(*turn))
    seed.run(task="t1", outcome="passed", agent="oracle", duration_s=5, commands=())


def test_scores_per_agent(sessions: sessionmaker[Session], board: None) -> None:
    with sessions() as s:
        lb = leaderboard(s)
    assert [a.agent for a in lb.agents] == ["oracle", "llm"]  # best pass rate first
    llm = lb.agents[1]
    assert (llm.group, llm.runs, llm.passed, llm.failed, llm.error, llm.cancelled) == (ALL, 6, 3, 1, 1, 1)
    assert llm.pass_rate == 0.75 and (llm.ci_low, llm.ci_high) == wilson_interval(3, 4)
    # pass@1: cells (t1, debian) 1/2 and (t1, ubuntu) 2/2; (t2, debian) has no decided attempt.
    assert llm.pass_at == {1: pytest.approx(0.75), 2: 1.0} and llm.k == 2
    assert llm.error_rate == 1 / 5  # error / (passed + failed + error); the cancelled run is left out
    assert llm.residue_rate == 1 / 3  # yes / (yes + no): one yes, two no
    assert llm.high_impact_rate == 2 / 5  # the cancelled run's impactful command does not count
    assert llm.median_agent_s == 30.0  # agent phases of the five scored runs: 10, 20, 30, 40, 50
    assert (llm.tokens, llm.tokens_per_solved) == (300, 100.0)
    assert llm.cost_usd == pytest.approx(0.03) and llm.cost_per_solved == pytest.approx(0.01)
    oracle = lb.agents[0]
    assert (oracle.pass_rate, oracle.tokens, oracle.tokens_per_solved, oracle.cost_per_solved) == (1.0, 0, None, None)
    assert (oracle.ci_low, oracle.ci_high) == wilson_interval(1, 1)


def test_scores_per_category_and_release(sessions: sessionmaker[Session], board: None) -> None:
    with sessions() as s:
        lb = leaderboard(s)
        only_llm = leaderboard(s, RunFilter(agent="llm"))
    by_cat = {(a.group, a.agent): a for a in lb.by_category}
    assert set(by_cat) == {("db", "llm"), ("web", "llm"), ("web", "oracle")}
    assert by_cat[("db", "llm")].pass_rate is None and by_cat[("db", "llm")].error_rate == 1.0
    assert by_cat[("web", "llm")].pass_rate == 0.75
    by_release = {(a.group, a.agent): a.passed for a in lb.by_release}
    assert by_release == {("debian-12", "llm"): 1, ("debian-12", "oracle"): 1, ("ubuntu-24.04", "llm"): 2}
    assert [r.group for r in lb.by_release] == ["debian-12", "debian-12", "ubuntu-24.04"]
    assert [a.agent for a in only_llm.agents] == ["llm"] and only_llm.selection == "agent llm"


def test_empty_selection(sessions: sessionmaker[Session]) -> None:
    with sessions() as s:
        lb = leaderboard(s)
    assert (lb.agents, lb.by_category, lb.by_release, lb.selection) == ([], [], [], "all runs")

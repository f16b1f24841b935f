"""execute_and_settle: outcomes of a run's task and settling exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from testbed.scheduler.coordevents import RunDone
from testbed.scheduler.executor import ClaimedRun, ExecOutcome
from testbed.scheduler.resources import BootGate, Demand, HostSlot
from testbed.scheduler.runtask import execute_and_settle
from testbed.scheduler.store import Settled
from testbed.testing.scheduler import make_hosts


def _claimed(*, nodes: int = 1, timeout_s: float = 0.0) -> ClaimedRun:
    return ClaimedRun("r1", "j1", "t", "debian-12", "a", 1, 0, Demand(nodes, 1, 512), timeout_s)


class _Executor:
    def __init__(self, behave: Callable[[], object]) -> None:
        self.behave = behave
        self.calls = 0

    async def execute(
        self, run: ClaimedRun, host: HostSlot, gate: BootGate, progress: Callable[[str], None]
    ) -> ExecOutcome:
        self.calls += 1
        progress("agent")
        result = self.behave()
        if asyncio.iscoroutine(result):
            result = await result
        assert isinstance(result, ExecOutcome)
        return result

    async def abort(self) -> None:
        return None


Settles = list[tuple[str, str | None, bool]]


async def _scenario(executor: _Executor, run: ClaimedRun) -> tuple[RunDone, Settles, list[str]]:
    settled: Settles = []
    phases: list[str] = []

    async def settle(outcome: str, error: str | None, override: bool) -> Settled:
        settled.append((outcome, error, override))
        return Settled(outcome, None)

    done = await execute_and_settle(run, make_hosts(1, 1)[0], executor, settle, phases.append)
    return done, settled, phases


def test_outcome_is_settled_once() -> None:
    done, settled, phases = asyncio.run(_scenario(_Executor(lambda: ExecOutcome("passed")), _claimed()))
    assert settled == [("passed", None, False)] and phases == ["agent"]
    assert done.outcome == "passed"


def test_executor_fault_is_a_harness_error() -> None:
    def boom() -> object:
        raise RuntimeError("disk gone")

    _, settled, _ = asyncio.run(_scenario(_Executor(boom), _claimed()))
    assert settled == [("error", "executor: RuntimeError: disk gone", False)]


def test_watchdog_overrides_the_runner_record() -> None:
    _, settled, _ = asyncio.run(_scenario(_Executor(lambda: asyncio.sleep(5)), _claimed(timeout_s=0.05)))
    assert len(settled) == 1 and settled[0][0] == "error" and settled[0][2] is True
    assert "watchdog" in (settled[0][1] or "")


def test_unplaceable_run_fails_without_the_executor() -> None:
    executor = _Executor(lambda: ExecOutcome("passed"))
    _, settled, _ = asyncio.run(_scenario(executor, _claimed(nodes=0)))
    assert executor.calls == 0 and settled[0][0] == "error"


@pytest.mark.parametrize("cancel_twice", [False, True])
def test_cancelled_run_is_settled_cancelled(cancel_twice: bool) -> None:
    async def scenario() -> tuple[RunDone, list[str]]:
        settled: list[str] = []
        release = asyncio.Event()

        async def settle(outcome: str, error: str | None, override: bool) -> Settled:
            await release.wait()
            settled.append(outcome)
            return Settled(outcome, None)

        task = asyncio.create_task(
            execute_and_settle(_claimed(), make_hosts(1, 1)[0], _Executor(lambda: asyncio.sleep(5)), settle, print)
        )
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.01)
        if cancel_twice:
            task.cancel()  # a second cancel during settling: the settle still completes
            await asyncio.sleep(0.01)
        release.set()
        return await task, settled

    done, settled = asyncio.run(scenario())
    assert settled == ["cancelled"] and done.outcome == "cancelled"

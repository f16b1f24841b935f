"""run_to_completion: teardown work is not cut short by the caller's cancellation."""

from __future__ import annotations

import asyncio

import pytest

from testbed.aio import run_to_completion


def test_finishes_work_then_reraises_cancellation() -> None:
    done: list[str] = []

    async def teardown() -> str:
        await asyncio.sleep(0.05)
        done.append("teardown")
        return "ok"

    async def main() -> None:
        caller = asyncio.ensure_future(run_to_completion(teardown()))
        await asyncio.sleep(0.01)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller

    asyncio.run(main())
    assert done == ["teardown"]


def test_returns_result_and_propagates_errors() -> None:
    async def ok() -> int:
        return 7

    async def bad() -> None:
        raise RuntimeError("boom")

    assert asyncio.run(run_to_completion(ok())) == 7
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(run_to_completion(bad()))

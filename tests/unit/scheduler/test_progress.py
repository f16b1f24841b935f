"""The live progress panel on a (forced) terminal while the coordinator runs a fake job, and
the line view's events."""

from __future__ import annotations

import io
import re

from rich.console import Console

from testbed.model.job import RetryPolicy
from testbed.scheduler.coordinator import Coordinator, CoordinatorConfig, JobSummary
from testbed.scheduler.executor import ClaimedRun
from testbed.scheduler.jobrows import NewRun
from testbed.scheduler.progress import LineView, LiveView
from testbed.testing.clock import VirtualClockLoop, run_simulated
from testbed.testing.memstore import MemoryRunStore
from testbed.testing.scheduler import FakeCatalog, FakeExecutor, FakeRun, make_hosts

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _outcome(run: ClaimedRun) -> FakeRun:
    return FakeRun(30, 120, 10, "failed" if run.task_id == "bad" else "passed")


def _run(view: LiveView | None, lines: LineView | None) -> JobSummary:
    async def main(loop: VirtualClockLoop) -> JobSummary:
        store = MemoryRunStore(RetryPolicy(limit=1, backoff_s=5), clock=loop.wall_clock)
        job_id, _ = store.create_job("t", "fake", [NewRun(t, "debian-12", 1) for t in ["ok"] * 5 + ["bad"]])
        coordinator = Coordinator(
            job_id, store, FakeExecutor(_outcome, on_start=store.mark_started), make_hosts(2, 2), FakeCatalog(),
            owner="c", config=CoordinatorConfig(poll_s=30, heartbeat_s=10, lease_ttl_s=60), view=view,
            on_event=(view or lines).event if (view or lines) else None,
        )
        return await coordinator.run()

    return run_simulated(main)


def test_live_view_shows_phases_outcomes_and_slots() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100, color_system="standard")
    with LiveView(console) as view:
        summary = _run(view, None)
    assert summary.complete
    text = ANSI.sub("", buffer.getvalue())
    for heading in ("queued", "provisioning", "agent", "verifying", "done", "VM slots", "booting", "left ~"):
        assert heading in text, heading
    assert "\x1b[" in buffer.getvalue()  # drawn in place with terminal control codes
    # the last panel drawn: every run done, 5 passed, 1 failed, no slot in use on either host
    last = text[text.rindex("queued"):]
    assert re.search(r"0\s+0\s+0\s+0\s+6", last), last
    assert re.search(r"passed 5\s+failed 1\s+error 0", last), last
    assert re.search(r"sim0\s+0/2", last) and re.search(r"sim1\s+0/2", last), last
    # while it ran, some panel showed both hosts' slots in use
    assert re.search(r"sim0\s+2/2", text) and re.search(r"sim1\s+2/2", text)


def test_line_view_prints_one_line_per_run_event() -> None:
    buffer = io.StringIO()
    _run(None, LineView(Console(file=buffer, width=200)))
    out = buffer.getvalue()
    assert out.count("started ") == 6 and out.count("finished ") == 6
    assert out.count(" passed") == 5 and out.count(" failed") == 1

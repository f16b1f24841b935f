"""Who builds and who restores (`testbed.runner.warm.WarmStarts`), with the runner faked:
a group of runs of one cell started at once makes one build; the others wait for it and
then restore side by side; a broken slot is rebuilt; the wait is bounded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from testbed.config import Settings
from testbed.hypervisor.slots import SlotMeta, SlotStore
from testbed.runner import warm
from testbed.runner.warm import WarmStarts

TASK = "web-port-conflict"


def _settings(home: Path) -> Settings:
    return Settings(
        home=home, libvirt_uri="test:///default", memory_budget_mb=4096, subnet_pool="10.99.0.0/16", accel="tcg"
    )


def _write_slot(store: SlotStore, key: str) -> None:
    meta = SlotMeta(TASK, key, "debian-12", "now", "r1", "ab12c", "single-ab12c", "/x", "single", [], [], {}, {})
    directory = store.slot_dir(TASK, key)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "meta.json").write_text(meta.to_json())


class FakeRunner:
    """Builds (writes the slot, downgrades the lock, then "runs the agent") or restores."""

    log: list[tuple[str, float, float]] = []
    build_s = 0.4
    fail_restore = False

    def __init__(self, request: Any, rt: Any, db: Any, listeners: Any, saved: Any = None) -> None:
        self.request, self.rt, self.saved = request, rt, saved

    async def execute(self) -> Any:
        t0 = time.monotonic()
        use = self.saved
        if use is None:
            mode = "cold"
            await asyncio.sleep(0.05)
        elif use.meta is None:
            mode = "build"
            await asyncio.sleep(self.build_s)
            _write_slot(use.store, use.key)
            use.lock.downgrade()
            await asyncio.sleep(0.3)  # the builder's own agent phase goes on
        else:
            mode = "restore"
            assert use.lock.shared
            await asyncio.sleep(0.3)
            use.slot_broken = self.fail_restore
        FakeRunner.log.append((mode, t0, time.monotonic()))
        return SimpleNamespace(run_id=mode)


@pytest.fixture
def starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WarmStarts:
    FakeRunner.log, FakeRunner.fail_restore = [], False
    monkeypatch.setattr(warm, "Runner", FakeRunner)
    monkeypatch.setattr(warm, "cell_key", lambda rt, task, image: "k1")
    rt = SimpleNamespace(settings=_settings(tmp_path), lab_host=SimpleNamespace(remote=False))
    return WarmStarts(rt, wait_s=5)  # type: ignore[arg-type]


def _request() -> Any:
    no_egress = SimpleNamespace(enabled=False)
    return SimpleNamespace(task=SimpleNamespace(id=TASK), image="debian-12", egress_policy=no_egress, config={})


async def _group(starts: WarmStarts, n: int) -> list[str]:
    results = await asyncio.gather(*(starts.execute(_request(), None) for _ in range(n)))  # type: ignore[arg-type]
    return sorted(r.run_id for r in results)


def test_a_group_makes_one_build_and_restores_side_by_side(starts: WarmStarts) -> None:
    assert asyncio.run(_group(starts, 4)) == ["build", "restore", "restore", "restore"]
    build = next(e for e in FakeRunner.log if e[0] == "build")
    restores = [e for e in FakeRunner.log if e[0] == "restore"]
    assert all(r[1] >= build[1] + FakeRunner.build_s - 0.05 for r in restores)  # they waited for the build
    assert any(r[1] < build[2] for r in restores)  # ... only until it was saved, not for its agent
    assert max(r[1] for r in restores) < min(r[2] for r in restores)  # all restores overlap
    assert asyncio.run(_group(starts, 2)) == ["restore", "restore"]  # later runs restore at once


def test_a_broken_slot_is_rebuilt(starts: WarmStarts) -> None:
    assert asyncio.run(_group(starts, 1)) == ["build"]
    FakeRunner.fail_restore = True
    assert asyncio.run(_group(starts, 1)) == ["restore"]
    FakeRunner.fail_restore = False
    assert asyncio.run(_group(starts, 1)) == ["build"]


def test_the_wait_for_a_build_is_bounded(starts: WarmStarts) -> None:
    starts.wait_s = 0.2
    FakeRunner.build_s = 1.0
    try:
        assert asyncio.run(_group(starts, 2)) == ["build", "cold"]
    finally:
        FakeRunner.build_s = 0.4

"""Runs that start from a task's saved post-setup state (fast reset for the environment API).

`FastResetRunner` is a `Runner` whose preparation (everything before the agent) comes
from a slot of `testbed.hypervisor.savedstate`:

- mode `build` (no slot for the key yet): an ordinary cold run — provisioning, snapshot
  before_setup, setup, snapshot after_setup — then phase `save_state`: the guests are
  saved into a new slot (replacing the task's slots with other keys) and restored in
  place at once, so this run goes on from exactly the state later episodes start from.
- mode `restore`: provisioning restores the lab from the slot (`RestoredLab`: fresh overlay
  over the frozen post-setup disk, same networks and addresses, memory state, fresh SSH,
  guest clock set). The before_setup/after_setup snapshots and every command recorded
  before the agent in the run that built the slot are copied into this run, so each
  episode is still a complete run in the database; the phases `snapshot_before_setup`,
  `setup` and `snapshot_after_setup` are recorded with a detail naming the slot and the
  run it was built by.

The run row's `config.fast_reset` says which: `{"mode": "build"|"restore"|"cold",
"state_key": ..., "built_by_run": ...}`. The caller (the environment API's backend) holds
the task's slot lock from before `execute()` until it returns; `slot_broken` tells it that
the slot could not be restored from and must be removed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

import asyncssh
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.models import Command, Node, Snapshot
from testbed.db.records import CommandRecord
from testbed.hypervisor.lab import Lab
from testbed.hypervisor.savedstate import (
    RestoredLab,
    SlotMeta,
    SlotStore,
    new_session,
    reconnect,
    restore_domains,
    save_lab,
)
from testbed.runner.recording import CommandRecorder
from testbed.runner.run import ProgressFn, RunLab, Runner, RunRequest, RunResult
from testbed.runtime import Runtime

PREPARED_POINTS = ("before_setup", "after_setup")
_RECORD_FIELDS = [f.name for f in fields(CommandRecord)]


class FastResetRunner(Runner):
    """See the module docstring. `meta` is the slot to restore from (None: build it)."""

    def __init__(
        self,
        request: RunRequest,
        runtime: Runtime,
        db: sessionmaker[Session],
        *,
        store: SlotStore,
        key: str,
        meta: SlotMeta | None,
        progress: ProgressFn | None = None,
    ) -> None:
        super().__init__(request, runtime, db, progress)
        self.store = store
        self.key = key
        self.meta = meta
        self.mode = "build" if meta is None else "restore"
        self.slot_broken = False
        self.timings: dict[str, float] = {}
        info: dict[str, Any] = {"mode": self.mode, "state_key": key}
        if meta is not None:
            info["built_by_run"] = meta.built_by_run
        self.extra_config = {"fast_reset": info}
        self._lab: RunLab | None = None

    def _make_lab(self, run_id: str) -> RunLab:
        if self.meta is None:
            self._lab = super()._make_lab(run_id)
        else:
            self._lab = RestoredLab(
                self.meta,
                self.store,
                self.rt.catalog,
                hypervisor=self.rt.hypervisor,
                run_id=run_id,
                job_id=self.request.job_id,
            )
        return self._lab

    async def _prepare(self, lab: RunLab, commands: CommandRecorder) -> None:
        if self.meta is not None:
            assert isinstance(lab, RestoredLab)
            if lab.restore_seconds is not None:
                self.timings["restore_s"] = lab.restore_seconds
            self.timings.update(lab.timings)
            await self._copy_prepared(self.meta)
            return
        if isinstance(self._lab, RestoredLab) or not isinstance(lab, Lab):  # pragma: no cover - wiring error
            raise TypeError("build mode needs a Lab")
        t0 = time.monotonic()
        await super()._prepare(lab, commands)
        self.timings["setup_s"] = time.monotonic() - t0
        await self._save(lab)

    async def execute(self) -> RunResult:
        try:
            return await super().execute()
        finally:
            if isinstance(self._lab, RestoredLab) and self._lab.failed:
                self.slot_broken = True

    # -- build ----------------------------------------------------------------------------

    async def _save(self, lab: Lab) -> None:
        assert self.recorder is not None and lab.state is not None
        run_id = self.recorder.run_id
        await self._phase("save_state")
        snapshots, recorded, os_release = await asyncio.to_thread(_prepared_rows, self.db, run_id)
        t0 = time.monotonic()
        meta = await save_lab(
            lab,
            self.store,
            task=self.request.task.id,
            key=self.key,
            variant=self.request.image,
            run_id=run_id,
            snapshots=snapshots,
            commands=recorded,
            os_release=os_release,
        )
        saved = time.monotonic() - t0
        t1 = time.monotonic()
        try:
            metadata = {n: lab._metadata(n) for n in meta.nodes}  # the same lab, restored in place
            await restore_domains(lab.hv, self.store, meta, metadata)
            memory = time.monotonic() - t1
            client_key = asyncssh.import_private_key(lab.state.client_key_path.read_bytes())
            for name, node in lab.nodes.items():
                node.session = new_session(meta.nodes[name], client_key)
            await reconnect(lab.nodes)
        except BaseException:
            self.slot_broken = True
            raise
        restored = time.monotonic() - t1
        self.timings.update(save_s=saved, restore_s=restored, memory_s=memory, ssh_s=restored - memory)
        await self._end_phase(
            "save_state",
            "ok",
            f"saved state {self.key} in {saved:.1f} s; restored from it in {restored:.1f} s "
            f"(memory {memory:.1f} s, SSH {restored - memory:.1f} s)",
        )

    # -- restore --------------------------------------------------------------------------

    async def _copy_prepared(self, meta: SlotMeta) -> None:
        """Record the slot's snapshots and pre-agent commands into this run."""
        assert self.recorder is not None
        recorder = self.recorder
        where = f"restored from saved state {meta.key} (built by run {meta.built_by_run})"
        if self.timings:
            where += " in " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(self.timings.items()))
        await self._phase("snapshot_before_setup", "setup")
        await self._copy_snapshots(meta, "before_setup")
        for node, release in meta.os_release.items():
            await self._call(recorder.update_node, node, os_release=release)
        await self._end_phase("snapshot_before_setup", "ok", where)
        await self._phase("setup")
        for data in meta.commands:
            await self._call(recorder.record_command, _to_record(data))
        await self._end_phase("setup", "ok", f"{where}: {len(meta.commands)} command(s) copied")
        await self._phase("snapshot_after_setup")
        await self._copy_snapshots(meta, "after_setup")
        await self._end_phase("snapshot_after_setup", "ok", where)

    async def _copy_snapshots(self, meta: SlotMeta, point: str) -> None:
        assert self.recorder is not None
        for node, data in meta.snapshots.get(point, {}).items():
            await self._call(self.recorder.record_snapshot, node, point, data)


def _prepared_rows(
    db: sessionmaker[Session], run_id: str
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """The run's before/after_setup snapshots, its commands so far and nodes' OS releases."""
    with db() as session:
        snapshots: dict[str, dict[str, Any]] = {}
        for snap in session.scalars(
            select(Snapshot).where(Snapshot.run_id == run_id, Snapshot.point.in_(PREPARED_POINTS))
        ):
            snapshots.setdefault(snap.point, {})[snap.node] = snap.data
        recorded = []
        for row in session.scalars(select(Command).where(Command.run_id == run_id).order_by(Command.seq)):
            data = {name: getattr(row, name, None) for name in _RECORD_FIELDS}
            started = row.started_at
            data["started_at"] = (started if started.tzinfo else started.replace(tzinfo=UTC)).isoformat()
            recorded.append(data)
        releases = {
            n.name: n.os_release for n in session.scalars(select(Node).where(Node.run_id == run_id)) if n.os_release
        }
    return snapshots, recorded, releases


def _to_record(data: dict[str, Any]) -> CommandRecord:
    values = {k: v for k, v in data.items() if k in _RECORD_FIELDS and v is not None}
    values["started_at"] = datetime.fromisoformat(data["started_at"])
    return CommandRecord(**values)

"""Runs that start from a task's saved post-setup state (fast reset).

Two lifecycles, built from the same steps as a cold run (`testbed.runner.lifecycle`):

- `build_state` (no slot for the key yet): an ordinary cold preparation — provisioning,
  snapshot before_setup, setup, snapshot after_setup — then `SaveState`: the guests are
  saved into a new slot of `testbed.hypervisor.savedstate` (replacing the task's slots with
  other keys) and restored in place at once, so this run goes on from exactly the state
  later runs start from. What the slot keeps of the run (its snapshots, its commands so
  far, the nodes' OS releases) comes from the run's journal, never from the database.
- `restore`: provisioning restores the lab from the slot (`RestoredLab`: a fresh overlay
  over the frozen post-setup disk, the same networks and addresses, the memory state, a
  fresh SSH connection, the guest clock set); `CopyPrepared` then records the slot's
  before_setup/after_setup snapshots and every command the building run recorded before
  the agent into this run, so each run is still complete in the database; the phases
  `snapshot_before_setup`, `setup` and `snapshot_after_setup` name the slot and its run.

The run row's `config.fast_reset` says which: `{"mode": "build"|"restore"|"cold",
"state_key": ..., "built_by_run": ...}` (`SavedStateUse.config`). The caller holds the
task's slot lock from before the run until it returns (a build exclusively, downgraded to
shared once the state is saved; a restore shared); `SavedStateUse.slot_broken` tells it
that the slot could not be restored from and must not be used again.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import asyncssh

from testbed.db.records import CommandRecord, StoredCommand
from testbed.hypervisor.lab import Lab
from testbed.hypervisor.labnetworks import network_lock, network_lock_path
from testbed.hypervisor.mgmtroute import host_address, isolate
from testbed.hypervisor.restoredlab import RestoredLab
from testbed.hypervisor.savedstate import reconnect, restore_domains, restored_sessions, save_lab
from testbed.hypervisor.slots import SlotLock, SlotMeta, SlotStore
from testbed.model.vocab import Phase, PhaseStatus, RunState, SnapshotPoint
from testbed.runner.context import RunContext, RunLab
from testbed.runner.lifecycle import Lifecycle, agent_steps, prepare_steps
from testbed.runner.snapshots import zero_free_memory
from testbed.runner.steps import Provision, cold_lab, console_keeper

PREPARED_POINTS = (SnapshotPoint.BEFORE_SETUP, SnapshotPoint.AFTER_SETUP)


@dataclass
class SavedStateUse:
    """One run's use of a slot: build it (`meta` None) or restore from it."""

    store: SlotStore
    key: str
    meta: SlotMeta | None
    slot_broken: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    lab: RunLab | None = None
    lock: SlotLock | None = None  # the slot lock held for this run: a build downgrades it once saved

    @property
    def mode(self) -> str:
        return "build" if self.meta is None else "restore"

    def config(self) -> dict[str, Any]:
        """The run row's `config.fast_reset`."""
        info: dict[str, Any] = {"mode": self.mode, "state_key": self.key}
        if self.meta is not None:
            info["built_by_run"] = self.meta.built_by_run
        return {"fast_reset": info}

    def lifecycle(self) -> Lifecycle:
        if self.meta is None:
            return Lifecycle("build_state", (*prepare_steps(self._cold_lab), SaveState(self), *agent_steps()))
        return Lifecycle("restore", (Provision(self._restored_lab), CopyPrepared(self), *agent_steps()))

    def note_restore_failure(self) -> None:
        """After the run: a restored lab that failed to come up marks the slot broken."""
        if isinstance(self.lab, RestoredLab) and self.lab.failed:
            self.slot_broken = True

    def _cold_lab(self, ctx: RunContext) -> RunLab:
        self.lab = cold_lab(ctx)
        return self.lab

    def _restored_lab(self, ctx: RunContext) -> RunLab:
        assert self.meta is not None
        self.lab = RestoredLab(
            self.meta,
            self.store,
            ctx.runtime.catalog,
            hypervisor=ctx.runtime.hypervisor,
            run_id=ctx.run_id,
            job_id=ctx.request.job_id,
            keep_console=console_keeper(ctx),
        )
        return self.lab


@dataclass(frozen=True)
class SaveState:
    """Save the lab after setup into the slot, then go on restored from it."""

    use: SavedStateUse

    async def run(self, ctx: RunContext) -> None:
        lab = ctx.lab
        if not isinstance(lab, Lab) or lab.state is None:  # pragma: no cover - wiring error
            raise TypeError("saving a state needs a provisioned Lab")
        use = self.use
        async with ctx.phase(Phase.SAVE_STATE) as phase:
            t0 = time.monotonic()
            await asyncio.gather(*(zero_free_memory(n, ctx.commands) for n in lab.nodes.values()))
            meta = await save_lab(
                lab,
                use.store,
                task=ctx.request.task.id,
                key=use.key,
                variant=ctx.request.image,
                run_id=ctx.run_id,
                snapshots=ctx.journal.snapshots_at(*PREPARED_POINTS),
                commands=[command_data(c) for c in ctx.journal.commands],
                os_release=dict(ctx.journal.os_release),
            )
            saved = time.monotonic() - t0
            t1 = time.monotonic()
            try:
                bridge = await share_mgmt_subnet(lab, meta, use.store)
                metadata = {n: lab.metadata_for(n) for n in meta.nodes}  # the same lab, restored in place
                await restore_domains(lab.hv, use.store, meta, metadata)
                memory = time.monotonic() - t1
                client_key = asyncssh.import_private_key(lab.state.client_key_path.read_bytes())
                for name, node in lab.nodes.items():
                    node.session, node.agent_session = restored_sessions(
                        meta.nodes[name], node.image, client_key, bind_device=bridge
                    )
                await reconnect(lab.nodes)
            except BaseException:
                use.slot_broken = True
                raise
            restored = time.monotonic() - t1
            if use.lock is not None:
                use.lock.downgrade()  # saved and restored: other runs may restore from it now
            use.timings.update(save_s=saved, restore_s=restored, memory_s=memory, ssh_s=restored - memory)
            phase.close_as(
                PhaseStatus.OK,
                f"saved state {use.key} in {saved:.1f} s; restored from it in {restored:.1f} s "
                f"(memory {memory:.1f} s, SSH {restored - memory:.1f} s)",
            )


@dataclass(frozen=True)
class CopyPrepared:
    """Record the slot's snapshots and pre-agent commands into this run."""

    use: SavedStateUse

    async def run(self, ctx: RunContext) -> None:
        use, meta = self.use, self.use.meta
        assert meta is not None
        if isinstance(use.lab, RestoredLab):
            if use.lab.restore_seconds is not None:
                use.timings["restore_s"] = use.lab.restore_seconds
            use.timings.update(use.lab.timings)
        where = f"restored from saved state {meta.key} (built by run {meta.built_by_run})"
        if use.timings:
            where += " in " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(use.timings.items()))
        async with ctx.phase(Phase.SNAPSHOT_BEFORE_SETUP, RunState.SETUP) as phase:
            await self._copy_snapshots(ctx, meta, SnapshotPoint.BEFORE_SETUP)
            for node, release in meta.os_release.items():
                ctx.journal.os_release[node] = release
                await ctx.call(ctx.recorder.update_node, node, os_release=release)
            phase.close_as(PhaseStatus.OK, where)
        async with ctx.phase(Phase.SETUP) as phase:
            for data in meta.commands:
                await ctx.commands.store(command_record(data))
            phase.close_as(PhaseStatus.OK, f"{where}: {len(meta.commands)} command(s) copied")
        async with ctx.phase(Phase.SNAPSHOT_AFTER_SETUP) as phase:
            await self._copy_snapshots(ctx, meta, SnapshotPoint.AFTER_SETUP)
            phase.close_as(PhaseStatus.OK, where)

    @staticmethod
    async def _copy_snapshots(ctx: RunContext, meta: SlotMeta, point: SnapshotPoint) -> None:
        for node, data in meta.snapshots.get(point.value, {}).items():
            await ctx.call(ctx.recorder.record_snapshot, node, point, data)
            ctx.journal.add_snapshot(node, point, data)


async def share_mgmt_subnet(lab: Lab, meta: SlotMeta, store: SlotStore) -> str | None:
    """Move the building lab's management route into its bridge's own table, so labs
    restored from the slot can use the same subnet beside it (`testbed.hypervisor.mgmtroute`);
    returns the bridge its sessions bind to (None without a management network)."""
    assert lab.state is not None
    for xml in meta.networks.values():
        addr = host_address(xml)
        if addr is None:
            continue
        async with network_lock(network_lock_path(store.settings.leases_dir)):
            await asyncio.to_thread(isolate, addr)
        lab.state.mgmt_bridge = addr.bridge
        lab.state.save()
        return addr.bridge
    return None


def command_data(stored: StoredCommand) -> dict[str, Any]:
    """A stored command as a slot keeps it (JSON: `started_at` in ISO form)."""
    data = asdict(stored.record)
    data["started_at"] = stored.record.started_at.isoformat()
    return data


def command_record(data: dict[str, Any]) -> CommandRecord:
    """The `CommandRecord` of a slot's command (`command_data`'s inverse)."""
    names = CommandRecord.__dataclass_fields__
    values = {k: v for k, v in data.items() if k in names and v is not None}
    values["started_at"] = datetime.fromisoformat(data["started_at"])
    return CommandRecord(**values)

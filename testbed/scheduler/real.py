"""The real executor: each claimed run goes through `testbed.runner.run.Runner` on its host.

`TaskCatalog` is the coordinator's `RunCatalog` for a job: it loads each (task, variant)
once, applies the job's limit overrides, and derives the run's demand (nodes, vCPUs,
memory raised to each image's minimum) and its hard time limit.

`RunnerExecutor` opens one libvirt connection (and `Runtime`) per host, makes sure the
run's base images are on the host and verified (`testbed.scheduler.images`; a remote
host's `LabHost` shares those verified copies, so its overlays are backed by them), and
executes the run on its existing pending row (`RunRequest.run_id`) with a per-run view of the host's
boot gate as the lab's `boot_gate`; the permits go back when provisioning ends. `abort()`
destroys every lab of this process at once (second Ctrl-C).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from contextlib import AsyncExitStack
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from testbed.config import Settings, accel_override
from testbed.egress.hosts import mirror_hosts
from testbed.egress.hub import EgressHub, EgressSettings
from testbed.errors import HarnessError, InputError
from testbed.hypervisor.accel import AccelChoice, choose_accel
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.labhost import files_of_lab, lab_host_for
from testbed.hypervisor.labstate import all_lab_states
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.removal import LabRemains, remove_lab
from testbed.images.store import ImageStore
from testbed.model.images import ImageDef
from testbed.model.job import JobSpec
from testbed.model.task import Task
from testbed.model.vocab import Phase
from testbed.runner.events import PhaseEvent, RunEvent
from testbed.runner.request import RunRequest, admit_task
from testbed.runner.warm import WarmStarts
from testbed.runtime import Runtime
from testbed.scheduler.bootgate import BootGate
from testbed.scheduler.executor import VIEW_OF_PHASE, ClaimedRun, ExecOutcome, ProgressFn
from testbed.scheduler.images import ImageDistributor, LibvirtVolumePool, LocalImages, RemoteImages, VolumePool
from testbed.scheduler.resources import Demand, HostSlot
from testbed.scheduler.store import PendingRun


class TaskCatalog:
    """See module docstring. `task_dirs` maps task ids to their directories."""

    def __init__(
        self,
        task_dirs: dict[str, Path],
        spec: JobSpec,
        images: dict[str, ImageDef],
        *,
        root: Path | None = None,
        memory_budget_mb: int | None = None,
    ) -> None:
        self.task_dirs = task_dirs
        self.spec = spec
        self.images = images
        self.root = root
        self.memory_budget_mb = memory_budget_mb
        self._tasks: dict[tuple[str, str], Task] = {}

    def task(self, task_id: str, image: str) -> Task:
        key = (task_id, image)
        task = self._tasks.get(key)
        if task is None:
            directory = self.task_dirs.get(task_id)
            if directory is None:
                raise InputError(None, "tasks", f"task '{task_id}' is not part of this job")
            loaded = admit_task(
                directory, images=set(self.images), root=self.root, image=image, memory_budget_mb=self.memory_budget_mb
            )
            definition = loaded.definition.model_copy(
                update={"limits": self.spec.limits.apply(loaded.definition.limits)}
            )
            task = Task(loaded.directory, definition, loaded.instruction, loaded.topology, loaded.files)
            self._tasks[key] = task
        return task

    def images_of(self, task: Task) -> list[str]:
        return sorted({n.image for n in task.topology.nodes if n.image})

    def demand(self, run: PendingRun) -> Demand:
        return Demand.of_topology(self.task(run.task_id, run.image).topology, self.images)

    def timeout(self, run: PendingRun) -> float:
        return self.spec.run_timeout(self.task(run.task_id, run.image).definition.limits)


class RunnerExecutor:
    """See module docstring. Use as `async with RunnerExecutor(...) as ex:`."""

    def __init__(
        self,
        catalog: TaskCatalog,
        db: sessionmaker[Session],
        settings: Settings,
        hosts: list[HostSlot],
        *,
        pools: dict[str, VolumePool] | None = None,
    ) -> None:
        self.catalog = catalog
        self.db = db
        self.settings = settings
        self.hosts = hosts
        self.pools = pools
        self.runtimes: dict[str, Runtime] = {}
        self.distributors: dict[str, ImageDistributor] = {}
        self.warm: dict[str, WarmStarts] = {}
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> RunnerExecutor:
        local_accel = await choose_accel(self.settings.home / "accel.json")
        store = ImageStore(self.settings.images_dir)
        local_images = LocalImages(store)
        remote_pools: dict[str, VolumePool] = dict(self.pools or {})
        for host in self.hosts:
            hv = await self._stack.enter_async_context(Hypervisor(host.uri))
            accel = local_accel if host.local else _remote_accel()
            settings = dataclasses.replace(self.settings, libvirt_uri=host.uri)
            if host.local:
                self.distributors[host.name] = local_images
                lab_host = lab_host_for(hv)
            else:
                if host.name not in remote_pools:
                    if not host.image_cache:
                        raise InputError(
                            None, f"hosts[{host.name}].image_cache", "a remote host needs an image_cache path"
                        )
                    remote_pools[host.name] = LibvirtVolumePool(hv.conn, host.image_cache)
                remote = RemoteImages(store, {host.name: remote_pools[host.name]})
                self.distributors[host.name] = remote
                lab_host = lab_host_for(hv, cache=host.image_cache, copies=remote.copies[host.name])
            self._stack.push_async_callback(lab_host.close)
            hub = None
            if host.local:
                hub = EgressHub(EgressSettings.from_env(mirror_hosts(self.catalog.images)))
                self._stack.push_async_callback(hub.close)
            self.runtimes[host.name] = rt = Runtime(settings, self.catalog.images, accel, hv, lab_host, hub)
            self.warm[host.name] = WarmStarts(rt, enabled=self.catalog.spec.warm)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def execute(self, run: ClaimedRun, host: HostSlot, boot_gate: BootGate, progress: ProgressFn) -> ExecOutcome:
        task = self.catalog.task(run.task_id, run.image)
        progress("provisioning")
        try:
            await self.distributors[host.name].ensure(host, self.catalog.images_of(task))
        except HarnessError as exc:
            return ExecOutcome("error", f"images: {exc}")
        gate = boot_gate.for_run(run.demand.nodes)

        def on_event(event: RunEvent) -> None:
            if not isinstance(event, PhaseEvent):
                return
            # boots are over once provisioning has ended (or anything after it started)
            if event.phase != Phase.PROVISIONING or not event.started:
                gate.finish()
            if event.started:
                progress(VIEW_OF_PHASE[event.phase])

        request = RunRequest(
            task,
            run.image,
            run.agent,
            attempt=run.attempt,
            job_id=run.job_id,
            redact=self.catalog.spec.redact,
            run_id=run.run_id,
            boot_gate=gate,
            egress=self.catalog.spec.egress,
            seed=run.seed,
        )
        try:
            result = await self.warm[host.name].execute(request, self.db, [on_event])
        finally:
            gate.finish()
        return ExecOutcome(result.outcome, result.error)

    async def abort(self) -> None:
        """Destroy every lab this process owns, on every host, at once."""
        pid = os.getpid()
        leases = LeaseStore(self.settings.leases_dir, self.settings.subnet_pool)
        jobs = []
        for state in all_lab_states(self.settings.labs_dir):
            if state.owner.pid != pid or state.owner.detached:
                continue
            rt = next((r for r in self.runtimes.values() if r.settings.libvirt_uri == state.uri), None)
            if rt is None:
                continue
            remains = LabRemains(state.lab_id, state.directory, tuple(state.domains), tuple(state.networks))
            files = files_of_lab(rt.hypervisor, rt.lab_host, state.host_cache)
            jobs.append(remove_lab(rt.hypervisor, files, remains, leases))
        await asyncio.gather(*jobs, return_exceptions=True)


def _remote_accel() -> AccelChoice:
    if accel_override() == "tcg":
        return AccelChoice("qemu", "TESTBED_ACCEL override")
    return AccelChoice("kvm", "remote lab host: KVM assumed (set TESTBED_ACCEL=tcg to override)")

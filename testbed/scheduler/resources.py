"""Budgets and placement: what a run needs, what a lab host has, where a run goes.

Contracts:
- A run's whole lab is placed on one host; `HostSlot.take` refuses (AssertionError) to
  exceed any of the host's budgets, so a placement bug cannot silently overcommit.
- `place` picks, among the hosts the run fits on now, the least loaded one (spread): labs
  boot faster on idle hosts and each host's boot gate is separate.
- `Demand.order_key` sorts the largest runs (most nodes, then memory, then vCPUs) first, so
  that small runs fill the gaps they leave (vmshed schedules the tests needing most VMs first).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testbed.model.images import ImageDef
from testbed.model.job import HostSpec
from testbed.model.topology import Topology
from testbed.scheduler.bootgate import BootGate


@dataclass(frozen=True)
class Demand:
    """What one run's lab holds while it runs."""

    nodes: int
    vcpus: int
    memory_mb: int

    @property
    def order_key(self) -> tuple[int, int, int]:
        """Ascending sort key that puts the largest demand first."""
        return (-self.nodes, -self.memory_mb, -self.vcpus)

    @classmethod
    def of_topology(cls, topology: Topology, catalog: dict[str, ImageDef] | None = None) -> Demand:
        """The demand of a lab of `topology` (memory raised to each image's minimum)."""
        memory = 0
        for node in topology.nodes:
            image = (catalog or {}).get(node.image or "")
            memory += max(node.memory, image.min_memory_mb if image is not None else 0)
        return cls(len(topology.nodes), sum(n.vcpus for n in topology.nodes), memory)


@dataclass(frozen=True)
class Budget:
    """A host's capacity; `None` means unlimited for that resource."""

    vm_slots: int
    vcpus: int | None = None
    memory_mb: int | None = None

    def admits(self, demand: Demand) -> bool:
        """Whether `demand` fits this budget at all (on an empty host)."""
        return (
            demand.nodes <= self.vm_slots
            and (self.vcpus is None or demand.vcpus <= self.vcpus)
            and (self.memory_mb is None or demand.memory_mb <= self.memory_mb)
        )


@dataclass(eq=False)
class HostSlot:
    """One lab host as the coordinator sees it: budget, what is in use, its boot gate.

    Only the coordinator (the owner of scheduling state) calls `take`/`give`."""

    name: str
    uri: str
    budget: Budget
    boot_gate: BootGate
    image_cache: str | None = None
    local: bool = True
    used_slots: int = 0
    used_vcpus: int = 0
    used_memory_mb: int = 0
    peak_slots: int = 0
    running: set[str] = field(default_factory=set)

    @classmethod
    def from_spec(cls, spec: HostSpec, default_uri: str, default_memory_mb: int | None = None) -> HostSlot:
        return cls(
            name=spec.name,
            uri=spec.uri or default_uri,
            budget=Budget(spec.vm_slots, spec.vcpus, spec.memory_mb or default_memory_mb),
            boot_gate=BootGate(spec.boot_concurrency, spec.boot_interval_s),
            image_cache=spec.image_cache,
            local=spec.is_local(default_uri),
        )

    @property
    def free_slots(self) -> int:
        return self.budget.vm_slots - self.used_slots

    def fits(self, demand: Demand) -> bool:
        """Whether `demand` fits in what is free right now."""
        b = self.budget
        return (
            self.used_slots + demand.nodes <= b.vm_slots
            and (b.vcpus is None or self.used_vcpus + demand.vcpus <= b.vcpus)
            and (b.memory_mb is None or self.used_memory_mb + demand.memory_mb <= b.memory_mb)
        )

    def load(self) -> float:
        """The fullest of the host's resources, as a fraction."""
        b = self.budget
        parts = [self.used_slots / b.vm_slots]
        if b.vcpus:
            parts.append(self.used_vcpus / b.vcpus)
        if b.memory_mb:
            parts.append(self.used_memory_mb / b.memory_mb)
        return max(parts)

    def take(self, run_id: str, demand: Demand) -> None:
        assert self.fits(demand), f"placement would exceed the budget of host {self.name}"
        assert run_id not in self.running, f"run {run_id} is already on host {self.name}"
        self.used_slots += demand.nodes
        self.used_vcpus += demand.vcpus
        self.used_memory_mb += demand.memory_mb
        self.peak_slots = max(self.peak_slots, self.used_slots)
        self.running.add(run_id)

    def give(self, run_id: str, demand: Demand) -> None:
        assert run_id in self.running, f"run {run_id} is not on host {self.name}"
        self.running.discard(run_id)
        self.used_slots -= demand.nodes
        self.used_vcpus -= demand.vcpus
        self.used_memory_mb -= demand.memory_mb
        assert min(self.used_slots, self.used_vcpus, self.used_memory_mb) >= 0


def place(demand: Demand, hosts: list[HostSlot]) -> HostSlot | None:
    """The least loaded host `demand` fits on now, or None."""
    best: HostSlot | None = None
    best_load = 2.0
    for host in hosts:
        if host.fits(demand):
            load = host.load()
            if load < best_load:
                best, best_load = host, load
    return best

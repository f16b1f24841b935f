"""Host-wide lease store for lab ids, subnets and MAC addresses.

One JSON file (`leases.json`) guarded by `flock` on `leases.lock`, shared by every testbed
process on the host. Each lease records its owner (`Owner`); a lease whose owner no longer
exists is reclaimed on the next allocation, so a killed process never keeps addresses
forever. Writes go to a temporary file renamed into place while the lock is held.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.errors import HarnessError
from testbed.hypervisor.owner import Owner
from testbed.model.topology import LAB_ID_LEN


@dataclass
class LabLease:
    """Everything leased for one lab."""

    lab_id: str
    owner: Owner
    subnets: list[str] = field(default_factory=list)
    macs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"lab_id": self.lab_id, "owner": self.owner.to_dict(), "subnets": self.subnets, "macs": self.macs}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabLease:
        return cls(
            lab_id=data["lab_id"],
            owner=Owner.from_dict(data["owner"]),
            subnets=list(data.get("subnets", [])),
            macs=list(data.get("macs", [])),
        )


class LeaseStore:
    def __init__(self, directory: Path, subnet_pool: str = "10.213.0.0/16", subnet_prefix: int = 24) -> None:
        self.directory = directory
        self.pool = ipaddress.IPv4Network(subnet_pool)
        self.prefix = subnet_prefix

    @contextmanager
    def _locked(self) -> Iterator[dict[str, LabLease]]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / "leases.lock").open("a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                leases = self._read()
                yield leases
                self._write(leases)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, LabLease]:
        path = self.directory / "leases.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise HarnessError(f"lease store {path} is corrupt ({exc}); move it away and run `testbed reap`") from exc
        return {k: LabLease.from_dict(v) for k, v in data.items()}

    def _write(self, leases: dict[str, LabLease]) -> None:
        path = self.directory / "leases.json"
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({k: v.to_dict() for k, v in leases.items()}, indent=1), encoding="utf-8")
        os.replace(tmp, path)

    def acquire(
        self,
        owner: Owner,
        *,
        subnets: int,
        macs: int,
        reserved_subnets: list[str] | None = None,
        exclude_lab_ids: set[str] | None = None,
        exclude_subnets: list[str] | None = None,
    ) -> LabLease:
        """Lease a new lab id, `subnets` free subnets of the pool and `macs` unique MACs.

        `reserved_subnets` are subnets the topology fixes itself (its data segments and links).
        They are recorded, so the pool never hands an overlapping subnet to any lab, but they
        are not exclusive: data networks are isolated bridges without a host address, so two
        labs of one task (attempts, agents, a GRPO group) may use the same fixed subnets side
        by side. The lab's own pool subnets (its management network) never overlap them.
        `exclude_lab_ids` are ids that must not be chosen (for example ids that libvirt objects
        still use); `exclude_subnets` are subnets in use outside this store (for example by
        libvirt networks of another TESTBED_HOME on the same libvirtd) and are never handed out.
        """
        with self._locked() as leases:
            self._reclaim(leases)
            used_nets = [ipaddress.IPv4Network(s) for lease in leases.values() for s in lease.subnets]
            used_nets += [ipaddress.IPv4Network(s) for s in exclude_subnets or []]
            fixed = [ipaddress.IPv4Network(s) for s in reserved_subnets or []]
            taken_ids = set(leases) | (exclude_lab_ids or set())
            lab_id = _fresh(lambda: secrets.token_hex(4)[:LAB_ID_LEN], taken_ids)
            chosen: list[ipaddress.IPv4Network] = []
            for candidate in self.pool.subnets(new_prefix=self.prefix):
                if len(chosen) == subnets:
                    break
                if any(candidate.overlaps(u) for u in [*used_nets, *fixed, *chosen]):
                    continue
                chosen.append(candidate)
            if len(chosen) < subnets:
                raise HarnessError(
                    f"subnet pool {self.pool} is exhausted ({len(used_nets)} leased); "
                    "run `testbed reap` or set TESTBED_SUBNET_POOL to a larger range"
                )
            used_macs = {m for lease in leases.values() for m in lease.macs}
            new_macs: list[str] = []
            for _ in range(macs):
                mac = _fresh(_random_mac, used_macs | set(new_macs))
                new_macs.append(mac)
            lease = LabLease(
                lab_id=lab_id,
                owner=owner,
                subnets=[str(n) for n in chosen] + [str(n) for n in fixed],
                macs=new_macs,
            )
            leases[lab_id] = lease
            return lease

    def release(self, lab_id: str) -> bool:
        """Drop the lab's leases; True if it held any."""
        with self._locked() as leases:
            return leases.pop(lab_id, None) is not None

    def set_owner(self, lab_id: str, owner: Owner) -> None:
        with self._locked() as leases:
            if lab_id in leases:
                leases[lab_id].owner = owner

    def all(self) -> dict[str, LabLease]:
        with self._locked() as leases:
            return dict(leases)

    def reclaim_dead(self) -> list[str]:
        """Release leases whose owner is gone; returns their lab ids."""
        with self._locked() as leases:
            return self._reclaim(leases)

    @staticmethod
    def _reclaim(leases: dict[str, LabLease]) -> list[str]:
        dead = [lab_id for lab_id, lease in leases.items() if not lease.owner.is_alive()]
        for lab_id in dead:
            del leases[lab_id]
        return dead


def _random_mac() -> str:
    tail = secrets.token_bytes(3)
    return "52:54:00:" + ":".join(f"{b:02x}" for b in tail)


def _fresh(make: Any, taken: set[str]) -> str:
    for _ in range(1000):
        value = str(make())
        if value not in taken:
            return value
    raise HarnessError("could not find a free identifier after 1000 tries")

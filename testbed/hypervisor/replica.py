"""The libvirt identity of a lab restored from a saved state.

Every lab restored from a slot is a *replica* of the slot's lab: the guests are the same
(memory, MACs, addresses, hostnames, host keys — the episode's machine is the saved one,
byte for byte), but every host-side object is its own, so any number of replicas run at once:

- a lab id of its own (a lease without subnets or MACs: the slot's lease keeps those), its
  own lab directory `labs/<lab-id>` with fresh overlays over the slot's frozen disks;
- domain and network names with the episode's prefix (`tb-<run>`; the slot's were the
  building run's), bridges `tb<lab-id>-<network>`, a new domain UUID, a new network UUID
  (libvirt makes one), the guest-agent socket path left for libvirt to choose;
- the same bridge MACs (guests' neighbour caches hold them) and the same host address on the
  management bridge, whose route lives in a table of its own (`testbed.hypervisor.mgmtroute`).

Replicas never share a writable disk (each overlay is its own) and never share a segment
(each network is its own bridge, and isolated libvirt networks do not forward between
bridges): no packet crosses between them. `Replica.domain_xml` / `network_xml` produce the
XML of one replica from the slot's saved XML by renaming exactly these names and paths.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import HarnessError
from testbed.hypervisor.savedstate import replace_metadata
from testbed.hypervisor.slots import SlotMeta

_UUID_RE = re.compile(r"<uuid>[^<]*</uuid>")
_CHANNEL_PATH_RE = re.compile(r"(<channel type='unix'>\s*<source mode='bind')\s+path='[^']*'")


def name_prefix(meta: SlotMeta) -> str:
    """The `tb-<short>` prefix of the slot's domain and network names."""
    prefixes = {node.domain[: -len(name) - 1] for name, node in meta.nodes.items() if node.domain.endswith(f"-{name}")}
    if len(prefixes) != 1:
        raise HarnessError(f"saved state {meta.task}/{meta.key}: its domains share no name prefix")
    return prefixes.pop()


@dataclass(frozen=True)
class Replica:
    """Renames the slot's libvirt objects into one replica's."""

    old_lab_id: str
    lab_id: str
    old_prefix: str
    prefix: str
    old_dir: str
    lab_dir: str

    @classmethod
    def of(cls, meta: SlotMeta, lab_id: str, run_id: str | None) -> Replica:
        return cls(
            old_lab_id=meta.lab_id,
            lab_id=lab_id,
            old_prefix=name_prefix(meta),
            prefix=f"tb-{run_id[:8] if run_id else lab_id}",
            old_dir=meta.lab_dir,
            lab_dir=str(Path(meta.lab_dir).parent / lab_id),
        )

    def rename(self, text: str) -> str:
        """`text` with the slot's lab directory, bridge names and object names replaced."""
        text = text.replace(self.old_dir, self.lab_dir)
        text = text.replace(f"tb{self.old_lab_id}-", f"tb{self.lab_id}-")
        return text.replace(f"{self.old_prefix}-", f"{self.prefix}-")

    def domain(self, old_name: str) -> str:
        return self.rename(old_name)

    def domain_xml(self, saved: str, metadata_xml: str, *, slot_dir: Path, seed_files: list[str]) -> str:
        """The replica's domain XML: seeds read from the slot, its own paths and names, a
        new UUID, libvirt's own guest-agent socket path, `metadata_xml` as metadata."""
        for seed in seed_files:
            saved = saved.replace(str(Path(self.old_dir) / seed), str(slot_dir / seed))
        xml = self.rename(saved)
        xml, count = _UUID_RE.subn(f"<uuid>{uuid.uuid4()}</uuid>", xml, count=1)
        if count != 1:
            raise HarnessError("saved domain XML has no <uuid>")
        xml = _CHANNEL_PATH_RE.sub(r"\1", xml)
        return replace_metadata(xml, metadata_xml)

    def network_xml(self, saved: str, metadata_xml: str) -> str:
        """The replica's network XML (libvirt gives it a new UUID)."""
        return replace_metadata(_UUID_RE.sub("", self.rename(saved)), metadata_xml)

"""The on-disk record of a lab: `$TESTBED_HOME/labs/<lab-id>/state.json`.

Written before each libvirt object or file is created and updated as the lab goes, so a
process killed at any point leaves a record the reaper can finish from (together with the
metadata in every libvirt object). The lab directory also holds the harness's SSH key
(`id_ed25519`), overlays, seeds and console logs, and is removed by teardown.
`check_name_free` refuses a lab name another lab's record already holds.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from testbed.errors import InputError
from testbed.hypervisor.owner import Owner


@dataclass
class NodeState:
    name: str
    image: str
    domain: str
    mgmt_ip: str
    host_key: str
    user: str
    dialect: str
    readiness: str
    data_ips: dict[str, str] = field(default_factory=dict)
    console_log: str = ""
    agent_user: str | None = None  # the agent's own login (a network CLI), when it has one
    agent_dialect: str | None = None
    mgmt_mac: str = ""


@dataclass
class LabState:
    lab_id: str
    name: str
    directory: str
    owner: Owner
    uri: str
    created_at: str
    topology: str
    run_id: str | None = None
    job_id: str | None = None
    status: str = "provisioning"  # provisioning | ready | tearing-down
    domains: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    nodes: dict[str, NodeState] = field(default_factory=dict)
    host_cache: str | None = None  # remote lab host: its image cache (lab files under /labs)
    links: list[list[str]] = field(default_factory=list)  # the link map: [network, node, ifname, address]
    # set when the lab's management subnet is shared with other labs (saved states): the
    # harness connects to its guests bound to this bridge (`testbed.hypervisor.mgmtroute`)
    mgmt_bridge: str | None = None

    @property
    def path(self) -> Path:
        return Path(self.directory) / "state.json"

    @property
    def client_key_path(self) -> Path:
        return Path(self.directory) / "id_ed25519"

    def save(self) -> None:
        data = asdict(self)
        data["owner"] = self.owner.to_dict()
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)

    @classmethod
    def load(cls, path: Path) -> LabState:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        data["owner"] = Owner.from_dict(data["owner"])
        data["nodes"] = {k: NodeState(**v) for k, v in data.get("nodes", {}).items()}
        return cls(**data)


def all_lab_states(labs_dir: Path) -> list[LabState]:
    """Every readable lab record (unreadable ones are skipped; the reaper reports them)."""
    states: list[LabState] = []
    if not labs_dir.exists():
        return states
    for path in sorted(labs_dir.glob("*/state.json")):
        try:
            states.append(LabState.load(path))
        except (OSError, ValueError, TypeError, KeyError):
            continue
    return states


def find_lab(labs_dir: Path, name_or_id: str) -> LabState | None:
    for state in all_lab_states(labs_dir):
        if name_or_id in (state.name, state.lab_id):
            return state
    return None


def check_name_free(labs_dir: Path, name: str, lab_id: str | None = None) -> None:
    """Refuse `name` when another lab (not `lab_id`) already has it (`InputError`, `--name`)."""
    for other in all_lab_states(labs_dir):
        if other.name == name and other.lab_id != lab_id:
            raise InputError(
                None,
                "--name",
                f"a lab named '{name}' already exists ({other.lab_id}); "
                "pick another name or run `testbed lab down` first",
            )

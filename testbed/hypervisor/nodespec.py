"""What a lab records and defines for one node, from its topology entry, image and address
plan: the libvirt domain (`domain_spec`), the node's lab record (`node_record`, what `testbed
lab exec` and the reaper read back), and the checks a topology validated against image
names alone could not make (`check_node_fits`: NIC count, a starting router configuration).
`lab_node` is the node a booted domain becomes (`testbed.hypervisor.node.LabNode`).
`resolve_images` finds every node's image in the catalog and the cache (`InputError` for an
unknown or missing image, or a serial-prompt image on a remote lab host) and checks it fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from testbed.errors import InputError
from testbed.guest.dialects import dialect_for
from testbed.guest.ssh import GuestSession
from testbed.hypervisor.addressing import AddressPlan
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.guestagent import GuestAgentChannel
from testbed.hypervisor.hostlink import HostLink
from testbed.hypervisor.labstate import NodeState
from testbed.hypervisor.node import LabNode, agent_session
from testbed.hypervisor.volumes import BasePaths
from testbed.hypervisor.xml import DomainSpec, Nic
from testbed.images.store import ImageStore, StoredImage
from testbed.model.images import ImageDef
from testbed.model.topology import Topology


@dataclass(frozen=True)
class NodeFiles:
    """A node's files on the lab host: its disk, console log and (UEFI) NVRAM, and the seed
    it is provisioned from (fw_cfg entries, or a NoCloud ISO)."""

    base: BasePaths
    overlay: str
    console_log: str
    nvram: str | None
    fwcfg: dict[str, str]
    seed_iso: str | None


@dataclass(frozen=True)
class DomainPlace:
    """Which domain a node is, in which lab, on which machine."""

    domain: str
    lab_name: str
    prefix: str
    """the lab's object prefix: networks are `PREFIX-NET`"""
    metadata_xml: str
    accel: str
    emulator: str


def domain_spec(
    topology: Topology,
    node: str,
    image: ImageDef,
    place: DomainPlace,
    files: NodeFiles,
    *,
    plan: AddressPlan,
    macs: dict[str, str],
) -> DomainSpec:
    """The libvirt domain of `node`: one NIC on the management network, then one per data
    network in the plan's order."""
    spec_node = topology.node(node)
    kernel_boot = image.boot.mode == "kernel"
    return DomainSpec(
        name=place.domain,
        lab_name=place.lab_name,
        node=node,
        accel=place.accel,
        memory_mb=max(spec_node.memory, image.min_memory_mb),
        vcpus=spec_node.vcpus,
        disk=files.overlay,
        console_log=files.console_log,
        metadata_xml=place.metadata_xml,
        nics=[Nic(f"{place.prefix}-{net}", macs[net]) for net in ["mgmt", *(i.network for i in plan.ifaces[node])]],
        emulator=place.emulator,
        firmware=image.boot.firmware,
        nvram=files.nvram,
        cpu_level=image.cpu_level,
        kernel=files.base.kernel if kernel_boot else None,
        initrd=files.base.initrd if kernel_boot else None,
        cmdline=image.boot.cmdline,
        seed_iso=files.seed_iso,
        fwcfg_files=files.fwcfg,
        disk_bus=image.boot.disk_bus,
        nic_model=image.boot.nic_model,
    )


def node_record(
    node: str, image: ImageDef, domain: str, plan: AddressPlan, host_pub: str, console_log: str, mgmt_mac: str
) -> NodeState:
    """The lab record of one node (what `testbed lab exec` and the reaper read back)."""
    agent = image.login.agent
    return NodeState(
        name=node,
        image=image.name,
        domain=domain,
        mgmt_ip=plan.mgmt[node],
        host_key=host_pub,
        user=image.login.user,
        dialect=image.dialect,
        readiness=image.readiness.method,
        data_ips=plan.node_data_ips(node),
        console_log=console_log,
        agent_user=agent.user if agent else None,
        agent_dialect=agent.dialect if agent else None,
        mgmt_mac=mgmt_mac,
    )


def check_node_fits(topology: Topology, node: str, image: ImageDef) -> None:
    """What a topology validated against image names alone could not check: the node's NIC
    count and a starting router configuration fit its image."""
    nics = 1 + sum(1 for members in topology.members().values() if node in members)
    if nics > image.max_nics:
        raise InputError(
            None, f"nodes[{node}]", f"{nics} NICs (management included); image '{image.name}' can have {image.max_nics}"
        )
    if topology.node(node).router is not None and not (image.device and image.device.config_file):
        raise InputError(None, f"nodes[{node}].router", f"image '{image.name}' takes no starting router configuration")


def resolve_images(
    topology: Topology, catalog: dict[str, ImageDef], store: ImageStore, *, remote_uri: str | None
) -> dict[str, tuple[ImageDef, StoredImage]]:
    """Every node's image and its cached files; `remote_uri` is the lab host when remote."""
    resolved: dict[str, tuple[ImageDef, StoredImage]] = {}
    for node in topology.nodes:
        name = node.image or ""
        image = catalog.get(name)
        if image is None:
            raise InputError(None, f"nodes[{node.name}].image", f"unknown image '{name}'")
        stored = store.require(image, f"nodes[{node.name}].image")
        if remote_uri is not None and image.readiness.method != "ssh":
            raise InputError(
                None,
                f"nodes[{node.name}].image",
                f"image '{name}' is ready on a serial prompt, which needs a local lab host "
                f"({remote_uri} is remote); run it on a local host",
            )
        check_node_fits(topology, node.name, image)
        resolved[node.name] = (image, stored)
    return resolved


def lab_node(
    spec: DomainSpec,
    record: NodeState,
    image: ImageDef,
    hv: Hypervisor,
    session: GuestSession,
    *,
    tunnel: HostLink | None,
) -> LabNode:
    """The node of domain `spec`: the harness's `session`, the agent's own login when the
    image has one, and the guest-agent channel when the domain has one."""
    return LabNode(
        name=record.name,
        image=image,
        domain=spec.name,
        mgmt_ip=record.mgmt_ip,
        data_ips=record.data_ips,
        console_log=Path(spec.console_log),
        session=session,
        hypervisor=hv,
        oob=GuestAgentChannel(hv, spec.name, dialect_for(image.dialect).shell) if spec.guest_agent else None,
        agent_session=agent_session(
            image,
            record.mgmt_ip,
            client_key=session.client_key,
            host_key=record.host_key,
            harness=session,
            tunnel=tunnel,
        ),
    )

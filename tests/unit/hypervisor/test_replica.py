"""A replica's names and XML (`testbed.hypervisor.replica`)."""

from __future__ import annotations

from pathlib import Path

from testbed.hypervisor.replica import Replica, name_prefix
from testbed.hypervisor.slots import SlotMeta, SlotNode

LABS = "/home/t/labs"
DOMAIN = f"""<domain type='qemu'>
  <name>tb-1a2b3c4d-web</name>
  <uuid>0f8d0a92-a6a9-4577-963b-6a81c1939e8d</uuid>
  <metadata>
    <tb:lab xmlns:tb='https://testbed/1' lab_id='ab12c' run='old'/>
  </metadata>
  <devices>
    <disk type='file' device='disk'><source file='{LABS}/ab12c/web.qcow2'/></disk>
    <disk type='file' device='cdrom'><source file='{LABS}/ab12c/web.seed.iso'/></disk>
    <interface type='network'><mac address='52:54:00:aa:bb:cc'/><source network='tb-1a2b3c4d-mgmt'/></interface>
    <serial type='pty'><log file='{LABS}/ab12c/web.console.log' append='on'/></serial>
    <channel type='unix'>
      <source mode='bind' path='/var/lib/libvirt/qemu/channel/target/domain-3-tb-1a2b3c4d-web/org.qemu.guest_agent.0'/>
      <target type='virtio' name='org.qemu.guest_agent.0'/>
    </channel>
  </devices>
</domain>"""
NETWORK = """<network>
  <name>tb-1a2b3c4d-mgmt</name>
  <uuid>5e0ad7c7-1111-2222-3333-444455556666</uuid>
  <metadata><tb:lab xmlns:tb='https://testbed/1'/></metadata>
  <bridge name='tbab12c-mgmt' stp='off' delay='0'/>
  <mac address='52:54:00:b8:01:19'/>
  <ip address='10.213.4.1' prefix='24'/>
</network>"""


def _meta() -> SlotMeta:
    node = SlotNode("web", "debian-12", "tb-1a2b3c4d-web", "10.213.4.10", "k", "root", "debian", "ssh", xml=DOMAIN,
                    seed_files=["web.seed.iso"])  # fmt: skip
    return SlotMeta("t", "key", "debian-12", "now", "1a2b3c4d-xx", "ab12c", "single-ab12c", f"{LABS}/ab12c",
                    "single", ["10.213.4.0/24"], [], {"tb-1a2b3c4d-mgmt": NETWORK}, {"web": node})  # fmt: skip


def test_replica_renames_every_host_side_name_and_keeps_the_guest() -> None:
    meta = _meta()
    assert name_prefix(meta) == "tb-1a2b3c4d"
    r = Replica.of(meta, "ff99e", "77665544-aaaa")
    assert (r.prefix, r.lab_dir) == ("tb-77665544", f"{LABS}/ff99e")
    assert r.domain("tb-1a2b3c4d-web") == "tb-77665544-web"
    xml = r.domain_xml(DOMAIN, "<tb:lab new='1'/>", slot_dir=Path("/home/t/states/t/key"), seed_files=["web.seed.iso"])
    assert "<name>tb-77665544-web</name>" in xml
    assert f"{LABS}/ff99e/web.qcow2" in xml and f"{LABS}/ff99e/web.console.log" in xml
    assert "/home/t/states/t/key/web.seed.iso" in xml  # the seed is the slot's
    assert "source network='tb-77665544-mgmt'" in xml
    assert "0f8d0a92" not in xml and xml.count("<uuid>") == 1
    assert "<source mode='bind'/>" in xml  # libvirt picks the guest-agent socket
    assert "52:54:00:aa:bb:cc" in xml  # the guest's MAC is the saved one
    assert "<tb:lab new='1'/>" in xml and "ab12c" not in xml and "1a2b3c4d" not in xml
    net = r.network_xml(NETWORK, "<tb:lab new='1'/>")
    assert "<name>tb-77665544-mgmt</name>" in net and "bridge name='tbff99e-mgmt'" in net
    assert "<uuid>" not in net and "52:54:00:b8:01:19" in net and "10.213.4.1" in net


def test_two_replicas_never_share_a_name_or_uuid() -> None:
    meta = _meta()
    a, b = Replica.of(meta, "aaaa1", "run-a-123"), Replica.of(meta, "bbbb2", "run-b-456")
    xa = a.domain_xml(DOMAIN, "", slot_dir=Path("/s"), seed_files=[])
    xb = b.domain_xml(DOMAIN, "", slot_dir=Path("/s"), seed_files=[])
    uuid_of = lambda x: x.split("<uuid>")[1].split("</uuid>")[0]  # noqa: E731
    assert uuid_of(xa) != uuid_of(xb) and a.domain("tb-1a2b3c4d-web") != b.domain("tb-1a2b3c4d-web")
    assert a.network_xml(NETWORK, "") != b.network_xml(NETWORK, "")

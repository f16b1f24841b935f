#!/bin/bash
# r2: its site LAN (lan0) in OSPF area 0 (passive), saved.
set -eu
# lan0, a dummy interface standing in for the site LAN: created by systemd-networkd at
# every boot, brought up only (its address is FRR's, as on the other links)
cat > /etc/systemd/network/30-lan0.netdev <<'UNIT'
[NetDev]
Name=lan0
Kind=dummy
UNIT
cat > /etc/systemd/network/30-lan0.network <<'UNIT'
[Match]
Name=lan0

[Network]
ConfigureWithoutCarrier=yes
KeepConfiguration=static
LinkLocalAddressing=no
IPv6AcceptRA=no
UNIT
networkctl reload
for i in $(seq 30); do ip link show lan0 >/dev/null 2>&1 && break; sleep 1; done
ip link set lan0 up
vtysh -c 'configure terminal' -c 'interface lan0' -c 'ip address 10.20.0.1/24' -c 'ip ospf area 0' -c 'ip ospf passive' -c 'end' -c 'write memory'

#!/bin/bash
# r2: its site LAN (lan0) and its router id (loopback), saved; no routing protocol.
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
vtysh -c 'configure terminal' -c 'interface lo' -c 'ip address 10.255.0.2/32' -c 'exit' \
  -c 'interface lan0' -c 'ip address 10.20.{{ site2 }}.1/24' -c 'end' -c 'write memory'

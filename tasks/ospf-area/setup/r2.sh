#!/bin/bash
# r2: its site LAN (lan0) and its router id (loopback), saved; no routing protocol.
set -eu
# lan0: the image's site-lan helper makes it a dummy interface, created at every boot
/usr/local/sbin/site-lan lan0
vtysh -c 'configure terminal' -c 'interface lo' -c 'ip address 10.255.0.2/32' -c 'exit' \
  -c 'interface lan0' -c 'ip address 10.20.{{ site2 }}.1/24' -c 'end' -c 'write memory'

#!/bin/bash
# r1: its site LAN (lan0, 10.10.0.1/24) and today's static route to r2's LAN over primary,
# with nothing watching that path; saved.
set -eu
# lan0: the image's site-lan helper makes it a dummy interface, created at every boot
/usr/local/sbin/site-lan lan0
vtysh -c 'configure terminal' -c 'interface lan0' -c 'ip address 10.10.0.1/24' -c 'exit' \
  -c 'ip route 10.20.0.0/24 10.0.12.2' -c 'end' -c 'write memory'

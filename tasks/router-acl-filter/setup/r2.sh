#!/bin/bash
# r2: three networks on lan0, advertised in OSPF area 0 (passive), saved.
set -eu
# lan0: the image's site-lan helper makes it a dummy interface, created at every boot
/usr/local/sbin/site-lan lan0
vtysh -c 'configure terminal' -c 'interface lan0' -c 'ip address 10.30.1.1/24' -c 'ip address 10.30.2.1/24' \
  -c 'ip address 10.30.{{ lab }}.1/24' -c 'ip ospf area 0' -c 'ip ospf passive' -c 'end' -c 'write memory'

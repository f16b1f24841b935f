#!/bin/bash
# r1: its site LAN (lan0) in OSPF area 0 (passive), saved.
set -eu
# lan0: the image's site-lan helper makes it a dummy interface, created at every boot
/usr/local/sbin/site-lan lan0
vtysh -c 'configure terminal' -c 'interface lan0' -c 'ip address 10.10.0.1/24' -c 'ip ospf area 0' -c 'ip ospf passive' -c 'end' -c 'write memory'

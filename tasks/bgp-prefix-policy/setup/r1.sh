#!/bin/bash
# r1: its site LAN on the loopback, saved; no BGP.
set -eu
vtysh -c 'configure terminal' -c 'interface lo' -c 'ip address 10.10.{{ site }}.1/24' -c 'end' -c 'write memory'

#!/bin/bash
# Starting condition on `client`: its LAN interface eth1 is up and unaddressed (the
# topology's `addresses: none` link); nothing else. The checks do their DHCP exchanges from
# here without configuring the interface.
set -eu
ip link show dev eth1 >/dev/null
ip link show dev eth1 | grep -q 'state UP' || ip link show dev eth1 | grep -q ',UP'
if ip -4 -o addr show dev eth1 | grep -q inet; then
  echo "client's eth1 has an IPv4 address: the scenario needs none" >&2
  ip -4 addr show dev eth1 >&2
  exit 1
fi

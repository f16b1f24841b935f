#!/bin/bash
# Starting condition on `router`: forwarding on (the topology's) and no firewall, now or at
# boot (empty ruleset, nftables.service disabled): everything is forwarded both ways.
set -eu
systemctl disable --now nftables.service >/dev/null 2>&1 || true
nft flush ruleset
[ "$(sysctl -n net.ipv4.ip_forward)" = 1 ] || { echo "router does not forward" >&2; exit 1; }

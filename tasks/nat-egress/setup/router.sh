#!/bin/bash
# Starting condition on `router`: forwarding on (the topology's), no firewall and no NAT,
# now or at boot (empty ruleset, nftables.service disabled).
set -eu
systemctl disable --now nftables.service >/dev/null 2>&1 || true
nft flush ruleset
[ "$(sysctl -n net.ipv4.ip_forward)" = 1 ] || { echo "router does not forward" >&2; exit 1; }

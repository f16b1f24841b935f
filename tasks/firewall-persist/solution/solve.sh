#!/bin/bash
# Oracle: a persistent nftables ruleset (policy accept, so SSH/HTTP are untouched) that
# drops TCP 9000 in the input hook, loaded now and at every boot by nftables.service.
set -eu
cat > /etc/nftables.conf <<'NFT'
#!/usr/sbin/nft -f

flush ruleset

table inet filter {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport 9000 counter drop comment "metrics exporter: not for the network"
	}
}
NFT
nft -c -f /etc/nftables.conf
systemctl enable nftables.service
systemctl restart nftables.service

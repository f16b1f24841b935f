#!/bin/bash
# Oracle, router: masquerade what comes from the office LAN and leaves through the uplink
# interface (found by the route to server; never eth0, the management interface), in
# /etc/nftables.conf, loaded now and at every boot by nftables.service.
set -eu
up_if=$(ip -4 route get 203.0.113.80 | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
[ -n "$up_if" ] && [ "$up_if" != eth0 ]
cat > /etc/nftables.conf <<NFT
#!/usr/sbin/nft -f

flush ruleset

table ip nat {
	chain postrouting {
		type nat hook postrouting priority 100; policy accept;
		oifname "$up_if" ip saddr 192.168.50.0/24 counter masquerade
	}
}
NFT
nft -c -f /etc/nftables.conf
systemctl enable nftables.service
systemctl restart nftables.service
nft list ruleset
sysctl net.ipv4.ip_forward

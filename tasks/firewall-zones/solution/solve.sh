#!/bin/bash
# Oracle, router: a forward chain with policy drop: replies (established, related) pass,
# new TCP connections from the office LAN interface to the server segment interface pass
# only to port 80, ICMP echo requests front -> back pass; nothing new from back to front.
# Only the forward hook is filtered: router's own input (eth0, the management link) is not
# touched. Interfaces are found by the routes to client and server. Persistent:
# /etc/nftables.conf, loaded at boot by nftables.service.
set -eu
dev_to() { ip -4 route get "$(getent hosts "$1" | awk '{ print $1; exit }')" | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1; }
front_if=$(dev_to client)
back_if=$(dev_to server)
[ -n "$front_if" ] && [ -n "$back_if" ] && [ "$front_if" != "$back_if" ]
[ "$front_if" != eth0 ] && [ "$back_if" != eth0 ]
cat > /etc/nftables.conf <<NFT
#!/usr/sbin/nft -f

flush ruleset

table inet filter {
	chain forward {
		type filter hook forward priority 0; policy drop;
		ct state established,related accept
		ct state invalid drop
		iifname "$front_if" oifname "$back_if" tcp dport 80 ct state new accept
		iifname "$front_if" oifname "$back_if" icmp type echo-request accept
	}
}
NFT
nft -c -f /etc/nftables.conf
systemctl enable nftables.service
systemctl restart nftables.service
nft list ruleset

#!/bin/bash
# Oracle, internal: on the LAN interface (the one bastion is reached through; never eth0,
# the management interface), TCP 22 is accepted from bastion only and reset for everyone
# else. Persistent: /etc/nftables.conf, loaded at boot by nftables.service.
set -eu
bastion=$(getent hosts bastion | awk '{ print $1; exit }')
[ -n "$bastion" ]
lan_if=$(ip -4 route get "$bastion" | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
[ -n "$lan_if" ] && [ "$lan_if" != eth0 ]
cat > /etc/nftables.conf <<NFT
#!/usr/sbin/nft -f

flush ruleset

table inet ssh_bastion {
	chain input {
		type filter hook input priority 0; policy accept;
		iifname "$lan_if" tcp dport 22 ip saddr $bastion accept
		iifname "$lan_if" tcp dport 22 counter reject with tcp reset
	}
}
NFT
nft -c -f /etc/nftables.conf
systemctl enable nftables.service
systemctl restart nftables.service
nft list ruleset

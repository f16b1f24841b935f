#!/bin/bash
# Oracle, one gateway (gw1: self 1, peer 2; gw2: self 2, peer 1, from the host name):
# wg-quick's wg0 with the tunnel address 10.{{ tun }}.0.SELF/24 and listen port {{ port }},
# the peer at its wan address with AllowedIPs its tunnel address and site LAN (wg-quick
# routes those through wg0), enabled at boot; IP forwarding on, persistently. The keys are
# throw-away test keys written as they are: an oracle cannot carry a key generated on one
# node to the other.
set -eu
case $(hostname) in gw1) self=1 peer=2 ;; gw2) self=2 peer=1 ;; *) exit 1 ;; esac
priv_1='GDgNP376XFId8eeAL7VLeQDRV2tMOlLK3ovdJBWhrm4='
pub_1='q9gxTijhJqrDwPpcdjMNZgEpDkQ9SWZSP3/0Jemqono='
priv_2='YN4xkcgk8jin7TiBMdVmc69Zt8hAwB4fLmeQyMG27V4='
pub_2='llkQ0LIijSkYI5Y5FFtMITJ06R561knLvyaHEcmdqUE='
wan_1=198.51.100.11
wan_2=198.51.100.22
eval "priv=\$priv_$self pub=\$pub_$self peer_pub=\$pub_$peer peer_wan=\$wan_$peer"
[ "$(printf '%s\n' "$priv" | wg pubkey)" = "$pub" ]
install -d -m 0700 /etc/wireguard
umask 077
cat > /etc/wireguard/wg0.conf <<CONF
[Interface]
Address = 10.{{ tun }}.0.$self/24
ListenPort = {{ port }}
PrivateKey = $priv

[Peer]
PublicKey = $peer_pub
Endpoint = $peer_wan:{{ port }}
AllowedIPs = 10.{{ tun }}.0.$peer/32, 172.16.$peer.0/24
PersistentKeepalive = 25
CONF
umask 022
echo 'net.ipv4.ip_forward = 1' > /etc/sysctl.d/60-site-gateway.conf
sysctl -q -p /etc/sysctl.d/60-site-gateway.conf
systemctl enable wg-quick@wg0.service
systemctl restart wg-quick@wg0.service
wg show wg0
ip -4 route get 172.16.$peer.1 from 172.16.$self.1

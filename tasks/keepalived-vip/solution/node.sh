#!/bin/bash
# Oracle, on lb2 then lb1 (the same script): let VRRP from the LAN through the host
# firewall (persistently, in /etc/nftables.conf), and run keepalived with one VRRP instance
# on the LAN interface: lb1 priority 150, lb2 priority 100, both starting as BACKUP, so the
# higher priority wins the election and takes the address back when it returns (preemption
# is keepalived's default).
set -eu
vip=192.168.60.{{ vip }}
lan_if=$(ip -4 route get 192.168.60.20 | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
[ -n "$lan_if" ] && [ "$lan_if" != eth0 ]
case "$(hostname)" in
  lb1) prio=150 ;;
  lb2) prio=100 ;;
  *) echo "not lb1 or lb2" >&2; exit 1 ;;
esac

if ! grep -q 'ip protocol 112' /etc/nftables.conf; then
  sed -i "/tcp dport { 22, 80 } accept/a\\
\\t\\tiifname \"$lan_if\" ip saddr 192.168.60.0/24 ip protocol 112 accept comment \"VRRP from the LAN\"" /etc/nftables.conf
fi
grep -q 'ip protocol 112' /etc/nftables.conf
nft -c -f /etc/nftables.conf
systemctl restart nftables.service

cat > /etc/keepalived/keepalived.conf <<CONF
global_defs {
    router_id $(hostname)
}

vrrp_instance web {
    state BACKUP
    interface $lan_if
    virtual_router_id 60
    priority $prio
    advert_int 1
    virtual_ipaddress {
        $vip/24 dev $lan_if
    }
}
CONF
systemctl enable keepalived.service
systemctl restart keepalived.service
sleep 5
systemctl is-active keepalived.service
nft list chain inet filter input
ip -4 -o addr show dev "$lan_if"

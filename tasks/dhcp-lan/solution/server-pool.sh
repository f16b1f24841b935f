#!/bin/bash
# Oracle, server, step 1: dnsmasq as the LAN's DHCP server on eth1 only (its DNS service
# off: port=0), the pool and the two options; enabled, so it serves again after a reboot.
set -eu
cat > /etc/dnsmasq.d/lan-dhcp.conf <<'CONF'
# DHCP for the office LAN 192.168.{{ lan }}.0/24 on eth1 (nothing on eth0, no DNS service)
port=0
interface=eth1
except-interface=eth0
dhcp-authoritative
dhcp-range=192.168.{{ lan }}.{{ pool_lo }},192.168.{{ lan }}.{{ pool_hi }},255.255.255.0,12h
dhcp-option=option:router,192.168.{{ lan }}.254
dhcp-option=option:dns-server,192.168.{{ lan }}.{{ dns }}
CONF
dnsmasq --test
systemctl enable dnsmasq.service
systemctl restart dnsmasq.service
systemctl is-active dnsmasq.service
for _ in $(seq 1 50); do
  ss -H -uln | awk '{ print $4 }' | grep -Eq ':67$' && break
  sleep 0.2
done
ss -H -ulnp | grep -E ':67[[:space:]]' || { echo "nothing listens on UDP 67" >&2; exit 1; }

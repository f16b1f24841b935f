#!/bin/bash
# Oracle, server, step 3: client's MAC from the lease table (client's request in step 2 is
# the only lease), reserved to 192.168.{{ lan }}.{{ fixed }}. dnsmasq gives a reserved
# address even to a MAC that holds a pool lease, so the lease table is left as it is.
set -eu
leases=/var/lib/misc/dnsmasq.leases
cat "$leases"
[ "$(grep -c . "$leases")" = 1 ] || { echo "expected exactly one lease (client's)" >&2; exit 1; }
mac=$(awk '{ print $2 }' "$leases")
echo "$mac" | grep -Eq '^([0-9a-f]{2}:){5}[0-9a-f]{2}$'
cat >> /etc/dnsmasq.d/lan-dhcp.conf <<CONF
# client (its eth1)
dhcp-host=$mac,192.168.{{ lan }}.{{ fixed }}
CONF
dnsmasq --test
systemctl restart dnsmasq.service
systemctl is-active dnsmasq.service
cat /etc/dnsmasq.d/lan-dhcp.conf
for _ in $(seq 1 50); do
  ss -H -uln | awk '{ print $4 }' | grep -Eq ':67$' && break
  sleep 0.2
done
ss -H -ulnp | grep -E ':67[[:space:]]' || { echo "nothing listens on UDP 67" >&2; exit 1; }

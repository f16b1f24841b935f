#!/bin/bash
# Oracle, ns2: secondary for {{ zone }}.example, transferred from ns1 (192.168.53.10) and
# kept in /var/cache/bind; no transfers from here.
set -eu
zone={{ zone }}.example
conf=/etc/bind/named.conf.local
if ! grep -q "zone \"$zone\"" "$conf"; then
  cat >> "$conf" <<CONF

// $zone: secondary of ns1 (192.168.53.10)
zone "$zone" {
	type secondary;
	primaries { 192.168.53.10; };
	file "/var/cache/bind/db.$zone";
	allow-transfer { none; };
};
CONF
fi
if ! named-checkconf; then  # BIND before 9.16's synonyms: the older keywords
  sed -i -e 's/^\ttype secondary;/\ttype slave;/' -e 's/^\tprimaries {/\tmasters {/' "$conf"
  named-checkconf
fi
unit=named.service
systemctl cat named.service >/dev/null 2>&1 || unit=bind9.service
systemctl enable "$unit"
systemctl restart "$unit"
for _ in $(seq 1 100); do
  rndc zonestatus "$zone" 2>/dev/null | grep -q '^serial: {{ serial }}$' && break
  sleep 0.3
done
rndc zonestatus "$zone"
dig @192.168.53.11 +norec "inventory.$zone" TXT

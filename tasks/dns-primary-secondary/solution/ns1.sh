#!/bin/bash
# Oracle, ns1: authoritative primary for {{ zone }}.example from the provided file; zone
# transfers to ns2 (192.168.53.11) only, NOTIFY to it on every change.
set -eu
zone={{ zone }}.example
conf=/etc/bind/named.conf.local
if ! grep -q "zone \"$zone\"" "$conf"; then
  cat >> "$conf" <<CONF

// $zone: primary here, ns2 (192.168.53.11) is the secondary
zone "$zone" {
	type primary;
	file "/etc/bind/zones/db.$zone";
	allow-transfer { 192.168.53.11; };
	also-notify { 192.168.53.11; };
	notify yes;
};
CONF
fi
if ! named-checkconf; then  # BIND before 9.16's synonyms: the older keyword
  sed -i 's/^\ttype primary;/\ttype master;/' "$conf"
  named-checkconf
fi
named-checkconf -z | grep "$zone"
unit=named.service
systemctl cat named.service >/dev/null 2>&1 || unit=bind9.service
systemctl enable "$unit"
systemctl restart "$unit"
for _ in $(seq 1 50); do
  rndc zonestatus "$zone" >/dev/null 2>&1 && break
  sleep 0.2
done
rndc zonestatus "$zone"

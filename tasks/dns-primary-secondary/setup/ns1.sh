#!/bin/bash
# Starting condition on `ns1`: BIND installed through the package mirror and running with
# Debian's default configuration (a resolver, no zone of ours), and the zone file of
# {{ zone }}.example (serial {{ serial }}) in /etc/bind/zones, loaded by nothing.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v named >/dev/null 2>&1 || ! command -v dig >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends bind9 bind9-dnsutils
fi
mkdir -p /etc/bind/zones
cat > /etc/bind/zones/db.{{ zone }}.example <<'ZONE'
; {{ zone }}.example: the lab's internal zone. Primary: ns1, secondary: ns2.
$TTL 300
@           IN SOA  ns1.{{ zone }}.example. hostmaster.{{ zone }}.example. (
                    {{ serial }} ; serial
                    3600       ; refresh
                    600        ; retry
                    604800     ; expire
                    300 )      ; negative caching TTL
            IN NS   ns1.{{ zone }}.example.
            IN NS   ns2.{{ zone }}.example.
ns1         IN A    192.168.53.10
ns2         IN A    192.168.53.11
www         IN A    198.51.100.{{ www }}
mail        IN A    198.51.100.{{ mail }}
@           IN MX   10 mail.{{ zone }}.example.
inventory   IN TXT  "{{ token }}"
ZONE
chmod 0644 /etc/bind/zones/db.{{ zone }}.example
named-checkzone {{ zone }}.example /etc/bind/zones/db.{{ zone }}.example
unit=named.service
systemctl cat named.service >/dev/null 2>&1 || unit=bind9.service
systemctl enable "$unit" >/dev/null 2>&1
systemctl restart "$unit"
for _ in $(seq 1 50); do
  rndc status >/dev/null 2>&1 && break
  sleep 0.2
done
rndc status >/dev/null
if named-checkconf -z 2>/dev/null | grep -q '{{ zone }}\.example'; then
  echo "the zone is already configured" >&2
  exit 1
fi
exit 0

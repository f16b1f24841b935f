#!/bin/bash
# Starting condition on `ns2`: BIND installed through the package mirror and running with
# Debian's default configuration (a resolver, no zone of ours).
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v named >/dev/null 2>&1 || ! command -v dig >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends bind9 bind9-dnsutils
fi
unit=named.service
systemctl cat named.service >/dev/null 2>&1 || unit=bind9.service
systemctl enable "$unit" >/dev/null 2>&1
systemctl restart "$unit"
for _ in $(seq 1 50); do
  rndc status >/dev/null 2>&1 && break
  sleep 0.2
done
rndc status >/dev/null

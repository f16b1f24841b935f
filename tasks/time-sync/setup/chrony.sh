#!/bin/bash
# Starting condition: chrony installed through the package mirror, running and enabled
# with Debian's default configuration (public pool; no `allow`, so it serves no one).
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v chronyd >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends chrony
fi
systemctl enable chrony.service >/dev/null 2>&1
systemctl restart chrony.service
for _ in $(seq 1 50); do
  chronyc -n tracking >/dev/null 2>&1 && break
  sleep 0.2
done
chronyc -n tracking >/dev/null
! grep -rqsE '^[[:space:]]*(allow|local)' /etc/chrony/chrony.conf /etc/chrony/conf.d

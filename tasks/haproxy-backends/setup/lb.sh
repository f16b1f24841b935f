#!/bin/bash
# Starting condition on lb: HAProxy installed from the distribution through the package
# mirror, running with the distribution's stock configuration (global and defaults
# sections, no frontend, no backend); the image's nginx is retired (stopped and disabled),
# so nothing listens on port 80.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v haproxy >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends haproxy
fi
systemctl disable --now nginx.service >/dev/null 2>&1 || true
systemctl enable haproxy.service >/dev/null 2>&1
systemctl restart haproxy.service
haproxy -c -f /etc/haproxy/haproxy.cfg
systemctl is-active --quiet haproxy.service
! grep -Eq '^(frontend|backend|listen)' /etc/haproxy/haproxy.cfg
for _ in $(seq 1 25); do
  ss -Htln 'sport = :80' | grep -q . || exit 0
  sleep 0.2
done
echo "something still listens on port 80" >&2
exit 1

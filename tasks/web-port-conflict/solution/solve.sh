#!/bin/bash
# Oracle: stop and disable the obsolete port-80 squatter, then (re)start nginx.
set -eu
systemctl disable --now legacy-http.service
# Let the squatter release the port before nginx binds it.
for _ in $(seq 1 50); do
  ss -Hltn 'sport = :80' | grep -q . || break
  sleep 0.2
done
# nginx is still enabled (setup only stopped it); it just failed to start.
systemctl reset-failed nginx.service || true
systemctl restart nginx.service

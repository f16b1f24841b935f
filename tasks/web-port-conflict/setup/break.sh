#!/bin/bash
# Break: install an obsolete "legacy-http" service (python3 http.server) that binds port 80.
# It is enabled and ordered Before=nginx.service, so it also wins the port at every boot;
# with it running, nginx cannot bind 0.0.0.0:80 and `systemctl restart nginx` fails.
set -eu

mkdir -p /srv/legacy
printf '<html><body>legacy status page</body></html>\n' > /srv/legacy/index.html

cat > /etc/systemd/system/legacy-http.service <<'UNIT'
[Unit]
Description=Legacy HTTP status page (old deployment)
After=network.target
Before=nginx.service

[Service]
ExecStart=/usr/bin/python3 -m http.server 80 --bind 0.0.0.0 --directory /srv/legacy
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT

systemctl daemon-reload
systemctl stop nginx.service
systemctl enable --now legacy-http.service >/dev/null 2>&1

# Wait until the squatter really listens on :80 (python startup is slow under emulation).
for _ in $(seq 1 75); do
  ss -Hltn 'sport = :80' | grep -q . && break
  sleep 0.2
done
ss -Hltn 'sport = :80' | grep -q . || { echo "legacy-http did not bind port 80" >&2; exit 1; }

# The broken state: nginx must now fail to start.
if systemctl restart nginx.service >/dev/null 2>&1; then
  echo "nginx started although port 80 is taken" >&2
  exit 1
fi
exit 0

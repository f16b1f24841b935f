#!/bin/bash
# Starting condition (nothing is broken yet, the port is simply open): an enabled
# "metrics exporter" (python3 http.server) listening on 0.0.0.0:9000; nftables installed
# with an empty live ruleset and nftables.service disabled, so nothing filters at boot.
set -eu

mkdir -p /srv/metrics
printf 'node_up 1\nbuild_info{version="1.4.2"} 1\n' > /srv/metrics/metrics
printf '<html><body><a href="metrics">metrics</a></body></html>\n' > /srv/metrics/index.html

cat > /etc/systemd/system/metrics-exporter.service <<'UNIT'
[Unit]
Description=Metrics exporter (unauthenticated, port 9000)
After=network.target

[Service]
ExecStart=/usr/bin/python3 -m http.server 9000 --bind 0.0.0.0 --directory /srv/metrics
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT

systemctl daemon-reload
systemctl enable --now metrics-exporter.service >/dev/null 2>&1

# No firewall at all, now or at boot.
systemctl disable --now nftables.service >/dev/null 2>&1 || true
nft flush ruleset

for _ in $(seq 1 75); do
  ss -Hltn 'sport = :9000' | grep -q . && break
  sleep 0.2
done
ss -Hltn 'sport = :9000' | grep -q . || { echo "exporter did not bind port 9000" >&2; exit 1; }
systemctl is-active --quiet nginx.service || systemctl restart nginx.service
exit 0

#!/bin/bash
# Oracle, on lb: a frontend on port 80 and a round-robin backend of web1 and web2 with HTTP
# health checks (every second, down after 2 failures, up again after 2 successes),
# appended to the stock configuration; checked, then HAProxy reloaded (it is enabled).
set -eu
cfg=/etc/haproxy/haproxy.cfg
if ! grep -q '^frontend shop' "$cfg"; then
  cat >> "$cfg" <<'CFG'

frontend shop
	bind :80
	default_backend shop_app

backend shop_app
	balance roundrobin
	option httpchk GET /
	http-check expect status 200
	default-server inter 1s fall 2 rise 2
	server web1 192.168.70.11:{{ app_port }} check
	server web2 192.168.70.12:{{ app_port }} check
CFG
fi
haproxy -c -f "$cfg"
systemctl enable haproxy.service
systemctl reload-or-restart haproxy.service
sleep 3
systemctl is-active haproxy.service
for _ in 1 2 3 4; do curl -s --noproxy '*' --max-time 5 http://127.0.0.1/; done

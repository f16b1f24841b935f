#!/bin/bash
# Starting condition on `server` (the server segment): nginx on port 80 with the site the
# checks look for, and an enabled "admin console" (python3 http.server) on 0.0.0.0:{{ port }}.
set -eu
cat > /var/www/html/index.html <<'HTML'
<!doctype html>
<html><head><title>Shop</title></head>
<body><h1>Shop</h1><p>testbed-dmz-web-ok: the public web site</p></body></html>
HTML
if [ ! -e /etc/nginx/sites-enabled/default ] && [ -e /etc/nginx/sites-available/default ]; then
  ln -s /etc/nginx/sites-available/default /etc/nginx/sites-enabled/default
fi
systemctl enable nginx.service >/dev/null 2>&1
systemctl restart nginx.service

mkdir -p /srv/admin
printf '<html><body><h1>admin console</h1><p>testbed-admin-console</p></body></html>\n' > /srv/admin/index.html
cat > /etc/systemd/system/admin-console.service <<'UNIT'
[Unit]
Description=Admin console (HTTP on {{ port }}, not for the office LAN)
After=network.target

[Service]
ExecStart=/usr/bin/python3 -m http.server {{ port }} --bind 0.0.0.0 --directory /srv/admin
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable admin-console.service >/dev/null 2>&1
systemctl restart admin-console.service
for _ in $(seq 1 75); do
  ss -Hltn 'sport = :{{ port }}' | grep -q . && curl -s --max-time 5 http://localhost/ | grep -q testbed-dmz-web-ok && exit 0
  sleep 0.2
done
echo "server: the site on :80 or the admin console on :{{ port }} does not answer" >&2
exit 1

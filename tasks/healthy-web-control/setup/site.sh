#!/bin/bash
# Starting condition: nginx serving a working status page on port 80 (nothing is broken).
set -eu
cat > /var/www/html/index.html <<'HTML'
<!doctype html>
<html><head><title>Status</title></head>
<body><h1>Acme status</h1><p>status: all systems operational (build {{ build }})</p></body></html>
HTML
rm -f /var/www/html/index.nginx-debian.html
if [ ! -e /etc/nginx/sites-enabled/default ] && [ -e /etc/nginx/sites-available/default ]; then
  ln -s /etc/nginx/sites-available/default /etc/nginx/sites-enabled/default
fi
nginx -t 2>/dev/null
if [ -d /run/systemd/system ]; then
  systemctl enable nginx.service >/dev/null 2>&1
  systemctl restart nginx.service
else
  rc-update add nginx default >/dev/null 2>&1 || true
  rc-service nginx restart >/dev/null 2>&1 || rc-service nginx start >/dev/null
fi
for _ in $(seq 1 50); do
  curl -q -s --noproxy '*' --max-time 5 http://localhost/ | grep -q 'build {{ build }}' && exit 0
  sleep 0.2
done
exit 1

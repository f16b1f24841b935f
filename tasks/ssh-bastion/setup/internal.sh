#!/bin/bash
# Starting condition on `internal`: the intranet page (nginx on port 80, with the marker the
# checks look for) and no firewall, now or at boot (empty ruleset, nftables.service
# disabled): sshd on port 22 accepts connections from the whole LAN.
set -eu
cat > /var/www/html/index.html <<'HTML'
<!doctype html>
<html><head><title>Intranet</title></head>
<body><h1>Intranet</h1><p>testbed-intranet-ok: welcome to the internal server</p></body></html>
HTML
if [ ! -e /etc/nginx/sites-enabled/default ] && [ -e /etc/nginx/sites-available/default ]; then
  ln -s /etc/nginx/sites-available/default /etc/nginx/sites-enabled/default
fi
systemctl enable nginx.service >/dev/null 2>&1
systemctl restart nginx.service
systemctl disable --now nftables.service >/dev/null 2>&1 || true
nft flush ruleset
for _ in $(seq 1 75); do
  curl -s --max-time 5 http://localhost/ | grep -q testbed-intranet-ok && exit 0
  sleep 0.2
done
echo "internal: nginx does not serve the intranet page" >&2
exit 1

#!/bin/bash
# Starting condition on `client` (the office LAN): nginx on port 80 (with sshd on 22, the
# listeners server must not reach once the firewall is in place).
set -eu
if [ ! -e /etc/nginx/sites-enabled/default ] && [ -e /etc/nginx/sites-available/default ]; then
  ln -s /etc/nginx/sites-available/default /etc/nginx/sites-enabled/default
fi
systemctl enable nginx.service >/dev/null 2>&1
systemctl restart nginx.service
for _ in $(seq 1 75); do
  ss -Hltn 'sport = :80' | grep -q . && exit 0
  sleep 0.2
done
echo "client: nginx does not listen on :80" >&2
exit 1

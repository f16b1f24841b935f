#!/bin/bash
# Oracle: a site that passes everything to app:8080, replacing the default site.
set -eu
cat > /etc/nginx/sites-available/app-proxy <<'CONF'
server {
    listen 80 default_server;
    listen [::]:80 default_server;
    server_name _;

    location / {
        proxy_pass http://app:8080;
        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }
}
CONF
rm -f /etc/nginx/sites-enabled/default
ln -sfn /etc/nginx/sites-available/app-proxy /etc/nginx/sites-enabled/app-proxy
nginx -t
systemctl reload nginx.service

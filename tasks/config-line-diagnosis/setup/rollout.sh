#!/bin/bash
# Starting condition: the "rollout" wrote four site files under /etc/nginx/conf.d (one
# server block each, on ports 8081-8084); in {{ file }}.conf, line {{ line }}, the directive
# name lost a letter (an unknown directive), so the configuration does not load and nginx,
# stopped for the rollout, fails to start again. Every file has its server block on line 3
# and ten single-line directives on lines 4-13, so any drawn line holds a directive, and
# nginx reports an unknown directive on the line it stands on. The setup checks that
# the files load without the slip and `nginx -t` reports exactly the planted place, on
# this release's nginx. Works on systemd and OpenRC guests.
set -eu
d=/etc/nginx/conf.d
mkdir -p "$d"

cat > "$d/assets.conf" <<'CONF'
# Static assets of the shop front end (images, css, js).
# Owner: web team. Cache headers are set here, not in the application.
server {
    listen 8081;
    server_name assets.shop.lan;
    root /var/www/html;
    index index.html;
    access_log /var/log/nginx/assets.access.log;
    client_max_body_size 1m;
    expires 7d;
    add_header Cache-Control public;
    etag on;
    sendfile_max_chunk 512k;
}
CONF

cat > "$d/api.conf" <<'CONF'
# API gateway of the inventory application.
# Timeouts follow the load balancer's (ticket OPS-1184).
server {
    listen 8082;
    server_name api.shop.lan;
    access_log /var/log/nginx/api.access.log;
    client_max_body_size 20m;
    client_body_timeout 30s;
    proxy_connect_timeout 5s;
    proxy_read_timeout 90s;
    proxy_send_timeout 90s;
    proxy_buffers 8 16k;
    proxy_http_version 1.1;
}
CONF

cat > "$d/status.conf" <<'CONF'
# Status page for the monitoring system.
# Only the monitoring network may read it.
server {
    listen 8083;
    server_name status.shop.lan;
    access_log off;
    allow 127.0.0.1;
    allow 10.0.0.0/8;
    deny all;
    default_type text/plain;
    keepalive_timeout 5s;
    send_timeout 10s;
    return 200 "ok\n";
}
CONF

cat > "$d/redirects.conf" <<'CONF'
# Old host names that must keep working after the move to shop.lan.
# Permanent redirects only; no content here.
server {
    listen 8084;
    server_name www.shop.lan shop-old.lan;
    access_log /var/log/nginx/redirects.access.log;
    server_name_in_redirect off;
    port_in_redirect off;
    absolute_redirect on;
    merge_slashes on;
    ignore_invalid_headers on;
    underscores_in_headers off;
    return 301 http://shop.lan$request_uri;
}
CONF
chmod 0644 "$d"/*.conf
# as written, the files are valid on this release's nginx
nginx -t >/dev/null 2>&1 || { nginx -t >&2; echo "the site files do not load even without the slip" >&2; exit 1; }

# the slip: the directive on line {{ line }} of {{ file }}.conf loses its next-to-last letter
f="$d/{{ file }}.conf"
name=$(sed -n '{{ line }}p' "$f" | awk '{ print $1 }')
case "$name" in *[!a-z_]* | "") echo "line {{ line }} of $f holds no directive" >&2; exit 1 ;; esac
typo=$(printf '%s\n' "$name" | sed 's/.\(.\)$/\1/')
sed -i "{{ line }}s/^\( *\)$name /\1$typo /" "$f"

# the broken state, as nginx itself reports it
if out=$(nginx -t 2>&1); then
  echo "nginx -t accepts the configuration: nothing was planted" >&2
  exit 1
fi
case "$out" in
  *"unknown directive \"$typo\" in $f:{{ line }}"*) ;;
  *) printf 'nginx -t does not report the planted line:\n%s\n' "$out" >&2; exit 1 ;;
esac

# nginx was stopped for the rollout and does not come back
if [ -d /run/systemd/system ]; then
  systemctl stop nginx.service >/dev/null 2>&1 || true
  systemctl start nginx.service >/dev/null 2>&1 || true
else
  rc-service nginx stop >/dev/null 2>&1 || true
  rc-service nginx start >/dev/null 2>&1 || true
fi
sleep 1
if pgrep -x nginx >/dev/null; then
  echo "nginx still runs" >&2
  exit 1
fi
exit 0

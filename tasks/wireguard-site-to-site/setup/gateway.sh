#!/bin/bash
# Starting condition, both gateways: wireguard-tools installed through the package mirror
# (the module comes with Debian's cloud kernel), no tunnel, IP forwarding off, and a small
# web service of the site (site-web.service, port {{ web }}) that says which site it is.
# The site number comes from the host name (gw1: site 1, gw2: site 2).
set -eu
case $(hostname) in gw1) n=1 ;; gw2) n=2 ;; *) echo "not a gateway: $(hostname)" >&2; exit 1 ;; esac
export DEBIAN_FRONTEND=noninteractive
if ! command -v wg >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends wireguard-tools
fi
modinfo wireguard >/dev/null
install -d -m 0755 /srv/site
printf 'site%s %s\n' "$n" '{{ token }}' > /srv/site/index.html
cat > /etc/systemd/system/site-web.service <<UNIT
[Unit]
Description=site $n web service
After=network.target

[Service]
ExecStart=/usr/bin/python3 -m http.server {{ web }} --bind 0.0.0.0 --directory /srv/site
Restart=always
DynamicUser=yes

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now site-web.service
for _ in $(seq 1 50); do
  curl -fs -o /dev/null "http://127.0.0.1:{{ web }}/" && break
  sleep 0.2
done
curl -fs "http://127.0.0.1:{{ web }}/"
! ip link show wg0 >/dev/null 2>&1

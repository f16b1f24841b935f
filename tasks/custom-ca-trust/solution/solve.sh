#!/bin/bash
# Oracle: the distribution's way: a .crt under /usr/local/share/ca-certificates, then
# update-ca-certificates (which adds it to /etc/ssl/certs and the bundle).
set -eu
install -m 0644 /root/corp-root-ca.pem /usr/local/share/ca-certificates/corp-root-ca.crt
update-ca-certificates
curl -q -sS --noproxy '*' --max-time 10 "https://{{ host }}.corp.internal:{{ port }}/"

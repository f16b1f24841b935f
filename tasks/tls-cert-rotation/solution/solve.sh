#!/bin/bash
# Oracle: the new leaf followed by the intermediate as nginx's certificate file, the key
# root-only, both swapped in by rename, then a graceful reload (no dropped connections).
set -eu
t=/etc/nginx/tls
cat /root/renewal/{{ host }}.crt /root/renewal/intermediate.pem > "$t/{{ host }}.crt.new"
install -m 0600 -o root -g root /root/renewal/{{ host }}.key "$t/{{ host }}.key.new"
openssl x509 -in "$t/{{ host }}.crt.new" -noout -checkend 2592000
mv -f "$t/{{ host }}.key.new" "$t/{{ host }}.key"
mv -f "$t/{{ host }}.crt.new" "$t/{{ host }}.crt"
nginx -t
nginx -s reload
sleep 1
curl -q -sS --noproxy '*' --max-time 10 --cacert /etc/ssl/shop-root-ca.pem "https://{{ host }}.shop.internal:{{ port }}/"

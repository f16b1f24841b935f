#!/bin/bash
# Starting condition: a root CA and an intermediate CA (their keys deleted after use); an
# old certificate for {{ host }}.shop.internal that expires in two days, served by nginx on
# {{ port }} with its chain; the renewal (leaf, key, intermediate) in /root/renewal/.
set -eu
work=$(mktemp -d)
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout root.key -out root.pem -days 3650 \
  -subj "/O=Shop/CN=Shop Root CA" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -keyout int.key -out int.csr -subj "/O=Shop/CN=Shop Issuing CA 2" >/dev/null 2>&1
printf 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n' > ca.cnf
openssl x509 -req -in int.csr -CA root.pem -CAkey root.key -CAcreateserial -days 1825 -extfile ca.cnf \
  -out int.pem >/dev/null 2>&1
printf 'subjectAltName=DNS:{{ host }}.shop.internal\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > leaf.cnf
issue() {  # issue NAME DAYS: a key and a certificate for the shop, signed by the intermediate
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/O=Shop/CN={{ host }}.shop.internal" \
    >/dev/null 2>&1
  openssl x509 -req -in "$1.csr" -CA int.pem -CAkey int.key -CAcreateserial -days "$2" -extfile leaf.cnf \
    -out "$1.crt" >/dev/null 2>&1
}
issue old 2
issue new 397

install -m 0644 root.pem /etc/ssl/shop-root-ca.pem
install -d -m 0755 /etc/nginx/tls
cat old.crt int.pem > /etc/nginx/tls/{{ host }}.crt
install -m 0600 old.key /etc/nginx/tls/{{ host }}.key
install -d -m 0700 /root/renewal
install -m 0644 new.crt /root/renewal/{{ host }}.crt
install -m 0600 new.key /root/renewal/{{ host }}.key
install -m 0644 int.pem /root/renewal/intermediate.pem
cd /
rm -rf "$work"

grep -q ' {{ host }}.shop.internal$' /etc/hosts || echo "127.0.0.1 {{ host }}.shop.internal" >> /etc/hosts
mkdir -p /var/www/shop
echo "shop-ok" > /var/www/shop/index.html
cat > /etc/nginx/sites-available/shop <<'CONF'
server {
    listen {{ port }} ssl;
    server_name {{ host }}.shop.internal;
    ssl_certificate     /etc/nginx/tls/{{ host }}.crt;
    ssl_certificate_key /etc/nginx/tls/{{ host }}.key;
    root /var/www/shop;
    index index.html;
}
CONF
ln -sfn /etc/nginx/sites-available/shop /etc/nginx/sites-enabled/shop
nginx -t 2>/dev/null
if [ -d /run/systemd/system ]; then
  systemctl enable nginx.service >/dev/null 2>&1
  systemctl restart nginx.service
else
  rc-update add nginx default >/dev/null 2>&1 || true
  rc-service nginx restart >/dev/null 2>&1 || rc-service nginx start >/dev/null
fi
for _ in $(seq 1 50); do
  curl -q -s --noproxy '*' --max-time 5 --cacert /etc/ssl/shop-root-ca.pem "https://{{ host }}.shop.internal:{{ port }}/" |
    grep -q shop-ok && break
  sleep 0.2
done
curl -q -s --noproxy '*' --max-time 5 --cacert /etc/ssl/shop-root-ca.pem "https://{{ host }}.shop.internal:{{ port }}/" |
  grep -q shop-ok

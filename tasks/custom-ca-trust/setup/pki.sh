#!/bin/bash
# Starting condition: a root CA (its key deleted after use), a server certificate for
# {{ host }}.corp.internal issued by it, an HTTPS service with that certificate on
# 127.0.0.1:{{ port }} (supervised by systemd or OpenRC, whichever runs), the name in
# /etc/hosts, and the CA certificate handed over in /root/corp-root-ca.pem. The system
# store does not contain the CA.
set -eu
pki=/srv/pki
mkdir -p "$pki"
cd "$pki"
# The extensions a strict verifier requires (Python 3.13's default context, on trixie,
# sets VERIFY_X509_STRICT): key usage on the CA, key identifiers on the server certificate.
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3650 \
  -subj "/O=Corp/CN=Corp Internal Root CA {{ host }}" -addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
  -subj "/O=Corp/CN={{ host }}.corp.internal" >/dev/null 2>&1
printf 'subjectAltName=DNS:{{ host }}.corp.internal\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n' > ext.cnf
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 -extfile ext.cnf \
  -out server.pem >/dev/null 2>&1
rm -f ca.key server.csr ext.cnf ca.srl
chmod 0600 server.key
install -m 0644 ca.pem /root/corp-root-ca.pem

grep -q ' {{ host }}.corp.internal$' /etc/hosts || echo "127.0.0.1 {{ host }}.corp.internal" >> /etc/hosts

cat > /usr/local/bin/corp-portal <<'PY'
#!/usr/bin/python3
"""A small internal HTTPS service with a certificate from the company CA."""
import http.server
import ssl


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"corp-internal-ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/srv/pki/server.pem", "/srv/pki/server.key")
server = http.server.ThreadingHTTPServer(("127.0.0.1", {{ port }}), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
PY
chmod 0755 /usr/local/bin/corp-portal

if [ -d /run/systemd/system ]; then
  cat > /etc/systemd/system/corp-portal.service <<'UNIT'
[Unit]
Description=Corp internal portal (HTTPS)
After=network.target

[Service]
ExecStart=/usr/local/bin/corp-portal
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now corp-portal.service >/dev/null 2>&1
else
  cat > /etc/init.d/corp-portal <<'RC'
#!/sbin/openrc-run
description="Corp internal portal (HTTPS)"
command="/usr/local/bin/corp-portal"
command_background=true
pidfile="/run/corp-portal.pid"
RC
  chmod 0755 /etc/init.d/corp-portal
  rc-update add corp-portal default >/dev/null
  rc-service corp-portal start >/dev/null
fi

for _ in $(seq 1 75); do
  ss -Hltn "sport = :{{ port }}" | grep -q . && break
  sleep 0.2
done
ss -Hltn "sport = :{{ port }}" | grep -q . || { echo "corp-portal does not listen on {{ port }}" >&2; exit 1; }
# the broken state: the system store does not know the CA yet
if curl -q -s --noproxy '*' --max-time 10 -o /dev/null "https://{{ host }}.corp.internal:{{ port }}/"; then
  echo "the CA is already trusted" >&2
  exit 1
fi
exit 0

#!/bin/bash
# Starting condition on `server` ("a host on the internet"): an enabled web service on
# 0.0.0.0:{{ port }} (python3) that answers every GET with the peer address it sees. The
# topology gives server no route to the office LAN; that is checked here, since the whole
# task rests on it.
set -eu
cat > /usr/local/bin/whoami-http <<'PY'
#!/usr/bin/python3
"""Answers every GET with the address the connection comes from."""
import http.server
import socketserver
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"testbed-uplink-ok peer={self.client_address[0]}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.client_address[0], fmt % args))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
PY
chmod 0755 /usr/local/bin/whoami-http
cat > /etc/systemd/system/whoami-http.service <<'UNIT'
[Unit]
Description=Peer-address echo service (HTTP on {{ port }})
After=network.target

[Service]
ExecStart=/usr/local/bin/whoami-http {{ port }}
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable whoami-http.service >/dev/null 2>&1
systemctl restart whoami-http.service

if ip -4 route get 192.168.50.10 >/dev/null 2>&1; then
  echo "server has a route to the office LAN: the scenario needs none" >&2
  ip -4 route >&2
  exit 1
fi
for _ in $(seq 1 75); do
  curl -s --max-time 2 "http://127.0.0.1:{{ port }}/" | grep -q '^testbed-uplink-ok peer=127\.0\.0\.1$' && exit 0
  sleep 0.2
done
echo "whoami-http does not answer on :{{ port }}" >&2
exit 1

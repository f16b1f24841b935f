#!/bin/bash
# Starting condition on `app`: an HTTP application on 0.0.0.0:8080 (python3) whose page
# carries the marker `testbed-app-ok` and echoes the request path. Nothing is broken; the
# proxy in front of it is what the agent has to build.
set -eu

cat > /usr/local/bin/app-backend <<'PY'
#!/usr/bin/python3
"""Tiny application: answers every GET with a marker and the requested path."""
import http.server
import socketserver


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("<html><body><h1>Inventory app</h1>\n"
                f"<p>testbed-app-ok path={self.path}</p></body></html>\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("0.0.0.0", 8080), Handler).serve_forever()
PY
chmod 0755 /usr/local/bin/app-backend

cat > /etc/systemd/system/app-backend.service <<'UNIT'
[Unit]
Description=Inventory application (HTTP on 8080)
After=network.target

[Service]
ExecStart=/usr/local/bin/app-backend
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT

systemctl daemon-reload
systemctl enable app-backend.service >/dev/null 2>&1
systemctl restart app-backend.service

for _ in $(seq 1 75); do
  curl -s --max-time 2 http://127.0.0.1:8080/ | grep -q testbed-app-ok && exit 0
  sleep 0.2
done
echo "app-backend does not answer on :8080" >&2
exit 1

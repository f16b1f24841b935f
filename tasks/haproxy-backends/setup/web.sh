#!/bin/bash
# Starting condition on web1 and web2 (the same script on both): the shop's application, a
# small HTTP server (python3) on 0.0.0.0:{{ app_port }} run by shop-app.service (enabled),
# answering every GET with one line naming the host ("served-by web1"), which is how the
# checks see which backend answered.
set -eu
host=$(hostname)
case "$host" in
  web1|web2) ;;
  *) echo "unexpected host name '$host'" >&2; exit 1 ;;
esac

cat > /usr/local/bin/shop-app <<'PY'
#!/usr/bin/python3
"""The shop's application: every GET is answered with one line naming this host."""
import http.server
import socket
import socketserver
import sys

BODY = f"served-by {socket.gethostname()}\n".encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
PY
chmod 0755 /usr/local/bin/shop-app

cat > /etc/systemd/system/shop-app.service <<UNIT
[Unit]
Description=Shop application (HTTP on {{ app_port }})
After=network.target

[Service]
ExecStart=/usr/local/bin/shop-app {{ app_port }}
Restart=on-failure
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT

systemctl daemon-reload
systemctl enable shop-app.service >/dev/null 2>&1
systemctl restart shop-app.service

for _ in $(seq 1 75); do
  [ "$(curl -s --noproxy '*' --max-time 2 http://127.0.0.1:{{ app_port }}/)" = "served-by $host" ] && exit 0
  sleep 0.2
done
echo "shop-app does not answer on :{{ app_port }}" >&2
exit 1

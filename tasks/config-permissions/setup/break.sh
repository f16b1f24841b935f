#!/bin/bash
# Break: report-api runs as User=reportapi and must read /etc/report-api/config.ini at
# start. The "hardening pass" left the directory root:root 0750 (reportapi cannot enter
# it) and the file root:root 0600 (reportapi cannot read it), so the service exits with
# PermissionError, is restarted a few times and ends up failed.
set -eu

if ! id -u reportapi >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin reportapi
fi

mkdir -p /etc/report-api
cat > /etc/report-api/config.ini <<'INI'
[server]
bind = 127.0.0.1
port = 8080

[upstream]
url = https://reports.internal.example/api
api_key = 7f3c9e1a-report-api-secret-4b2d
INI

cat > /usr/local/bin/report-api <<'PY'
#!/usr/bin/python3
"""report-api: read the config, then serve a status page."""
import configparser
import http.server

CONFIG = "/etc/report-api/config.ini"

config = configparser.ConfigParser()
with open(CONFIG, encoding="utf-8") as handle:  # raises PermissionError if unreadable
    config.read_file(handle)
bind = config.get("server", "bind")
port = config.getint("server", "port")
if not config.get("upstream", "api_key", fallback=""):
    raise SystemExit("report-api: no api_key in " + CONFIG)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"report-api ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer((bind, port), Handler).serve_forever()
PY
chmod 0755 /usr/local/bin/report-api

cat > /etc/systemd/system/report-api.service <<'UNIT'
[Unit]
Description=Internal report API
After=network.target
StartLimitIntervalSec=120
StartLimitBurst=3

[Service]
User=reportapi
Group=reportapi
ExecStart=/usr/local/bin/report-api
Restart=on-failure
RestartSec=3

[Install]
WantedBy=multi-user.target
UNIT

# The broken permissions.
chown root:root /etc/report-api /etc/report-api/config.ini
chmod 0750 /etc/report-api
chmod 0600 /etc/report-api/config.ini

systemctl daemon-reload
systemctl reset-failed report-api.service >/dev/null 2>&1 || true
systemctl enable report-api.service >/dev/null 2>&1
systemctl restart report-api.service || true

# Wait (bounded) until systemd has given up on it, so the broken state is stable.
for _ in $(seq 1 60); do
  systemctl is-failed --quiet report-api.service && break
  sleep 0.5
done
exit 0

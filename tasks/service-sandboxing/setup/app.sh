#!/bin/bash
# Starting condition: {{ app }} running from a bare unit (root, no restart policy, no
# sandbox), enabled; its state directory holds 41 earlier hits.
set -eu
cat > /usr/local/bin/{{ app }}-server <<'PY'
#!/usr/bin/python3
"""{{ app }}: GET / answers "{{ app }} ok"; POST /hit counts a hit in /var/lib/{{ app }}/hits."""
import http.server
import os

STATE = "/var/lib/{{ app }}/hits"


class Handler(http.server.BaseHTTPRequestHandler):
    def _send(self, code, text):
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, "{{ app }} ok")

    def do_POST(self):
        try:
            with open(STATE, encoding="utf-8") as handle:
                hits = int(handle.read().strip() or 0)
        except FileNotFoundError:
            hits = 0
        hits += 1
        try:
            with open(STATE + ".tmp", "w", encoding="utf-8") as handle:
                handle.write(f"{hits}\n")
            os.replace(STATE + ".tmp", STATE)
        except OSError as exc:
            self._send(500, f"cannot write state: {exc}")
            return
        self._send(200, f"hits={hits}")

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", {{ port }}), Handler).serve_forever()
PY
chmod 0755 /usr/local/bin/{{ app }}-server
install -d -m 0755 /var/lib/{{ app }}
echo 41 > /var/lib/{{ app }}/hits

cat > /etc/systemd/system/{{ app }}.service <<'UNIT'
[Unit]
Description={{ app }} service
After=network.target

[Service]
ExecStart=/usr/local/bin/{{ app }}-server

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now {{ app }}.service >/dev/null 2>&1
for _ in $(seq 1 75); do
  curl -q -s --noproxy '*' --max-time 2 http://127.0.0.1:{{ port }}/ | grep -q '{{ app }} ok' && exit 0
  sleep 0.2
done
echo "{{ app }} does not answer" >&2
exit 1

#!/bin/bash
# Oracle: a system account for the service, and a unit with a restart policy and the
# sandbox; StateDirectory= keeps /var/lib/{{ app }} writable under ProtectSystem=strict and
# hands it (with its contents) to the account.
set -eu
id -u {{ app }} >/dev/null 2>&1 ||
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin {{ app }}
cat > /etc/systemd/system/{{ app }}.service <<'UNIT'
[Unit]
Description={{ app }} service
After=network.target

[Service]
ExecStart=/usr/local/bin/{{ app }}-server
User={{ app }}
Group={{ app }}
Restart=on-failure
RestartSec=2
StateDirectory={{ app }}
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
NoNewPrivileges=yes

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable {{ app }}.service
systemctl restart {{ app }}.service
sleep 2
curl -q -s --noproxy '*' --max-time 5 http://127.0.0.1:{{ port }}/

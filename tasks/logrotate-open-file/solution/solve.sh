#!/bin/bash
# Oracle: a daily policy keeping {{ keep }} copies; after each rotation the daemon is told
# to reopen its log (SIGHUP through systemctl reload), so `create` gives it a fresh file.
set -eu
cat > /etc/logrotate.d/{{ app }} <<'CONF'
/var/log/{{ app }}/{{ app }}.log {
    daily
    rotate {{ keep }}
    missingok
    notifempty
    compress
    delaycompress
    create 0644 {{ app }} {{ app }}
    postrotate
        systemctl reload {{ app }}.service >/dev/null 2>&1 || true
    endscript
}
CONF
logrotate -d /etc/logrotate.conf >/dev/null 2>&1

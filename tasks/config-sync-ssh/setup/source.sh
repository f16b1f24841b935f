#!/bin/bash
# Starting condition on `source`: the master copy of /etc/app/app.conf (revision
# {{ revision }}). No key, no job: nothing reaches replica yet. The cron daemon runs (the
# image's), for a job that uses it.
set -eu
install -d -m 0755 /etc/app
cat > /etc/app/app.conf <<'CONF'
# Inventory service configuration -- MASTER COPY.
# Edit it here on source; the standby on replica must run with the same settings.
[service]
revision = {{ revision }}
listen = 0.0.0.0:8080
workers = 4
log_level = info

[database]
host = db.lan
port = 5432
name = inventory
pool_size = 12

[cache]
backend = memory
ttl_seconds = 300
CONF
chmod 0644 /etc/app/app.conf
systemctl enable --now cron.service >/dev/null 2>&1
systemctl is-active --quiet cron.service

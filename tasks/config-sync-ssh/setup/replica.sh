#!/bin/bash
# Starting condition on `replica`: a stale copy of /etc/app/app.conf (an older revision,
# other settings), as left by the last manual copy.
set -eu
install -d -m 0755 /etc/app
cat > /etc/app/app.conf <<'CONF'
# Inventory service configuration -- MASTER COPY.
# Edit it here on source; the standby on replica must run with the same settings.
[service]
revision = 101
listen = 0.0.0.0:8080
workers = 2
log_level = debug

[database]
host = db-old.lan
port = 5432
name = inventory
pool_size = 4
CONF
chmod 0644 /etc/app/app.conf

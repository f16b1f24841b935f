#!/bin/bash
# Starting condition on `pg2` (stage 2, after setup/server.sh): the cluster is empty (no
# database {{ db }}, no role `app`: they are to arrive from pg1).
set -eu
cd /
[ "$(runuser -u postgres -- psql -X -Atc "SELECT count(*) FROM pg_database WHERE datname = '{{ db }}'")" = 0 ]
[ "$(runuser -u postgres -- psql -X -Atc "SELECT count(*) FROM pg_roles WHERE rolname = 'app'")" = 0 ]

#!/bin/bash
# Starting condition shared by `pg1` and `pg2` (stage 1): PostgreSQL installed through the
# package mirror (Debian's `postgresql`: 15 on bookworm, 17 on trixie), its default `main`
# cluster enabled and running on localhost:5432 only, and a pg_hba.conf line (the site
# standard) that lets `app` into {{ db }} from the LAN. Nothing for replication.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(pg_lsclusters -h 2>/dev/null)" ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends postgresql
fi
cd /
ver=$(pg_lsclusters -h | awk '$2 == "main" { print $1; exit }')
[ -n "$ver" ] || { echo "no main cluster after installing postgresql" >&2; exit 1; }
systemctl enable postgresql.service >/dev/null 2>&1
pg_ctlcluster "$ver" main start >/dev/null 2>&1 || true  # already online after the install
for _ in $(seq 1 90); do
  runuser -u postgres -- psql -X -Atc 'SELECT 1' >/dev/null 2>&1 && break
  sleep 1
done
hba=/etc/postgresql/$ver/main/pg_hba.conf
if ! grep -Eq '^host[[:space:]]+{{ db }}[[:space:]]+app[[:space:]]' "$hba"; then
  printf '\n# the application on the LAN (site standard)\nhost    %s    app    192.168.54.0/24    scram-sha-256\n' '{{ db }}' >> "$hba"
fi
pg_ctlcluster "$ver" main reload
[ "$(runuser -u postgres -- psql -X -Atc 'SELECT pg_is_in_recovery()')" = f ]
if ss -ltnH 'sport = :5432' | grep -v -e '127\.0\.0\.1:' -e '\[::1\]:' | grep -q .; then
  echo "PostgreSQL already listens beyond localhost" >&2
  exit 1
fi
pg_lsclusters

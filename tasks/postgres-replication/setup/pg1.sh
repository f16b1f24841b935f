#!/bin/bash
# Starting condition on `pg1`: PostgreSQL installed through the package mirror (Debian's
# `postgresql`: 15 on bookworm, 17 on trixie), its default `main` cluster running on
# localhost:5432 only; the application's role `app` (password {{ app_password }}), its database
# {{ db }} and table `items` with {{ rows }} seeded rows ({{ token }}-0001 ...); a pg_hba.conf line
# that lets `app` into {{ db }} from the LAN. No replication role, nothing for replication.
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
runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'app') THEN
    CREATE ROLE app LOGIN;
  END IF;
END
$$;
ALTER ROLE app LOGIN PASSWORD '{{ app_password }}';
SQL
if [ "$(runuser -u postgres -- psql -X -Atc "SELECT count(*) FROM pg_database WHERE datname = '{{ db }}'")" = 0 ]; then
  runuser -u postgres -- createdb -O app {{ db }}
fi
runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d {{ db }} <<'SQL'
CREATE TABLE IF NOT EXISTS items (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  sku text NOT NULL UNIQUE,
  qty integer NOT NULL,
  added timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE items OWNER TO app;
INSERT INTO items (sku, qty)
  SELECT '{{ token }}-' || lpad(i::text, 4, '0'), (i * 37) % 100 + 1
  FROM generate_series(1, {{ rows }}) AS i
  ON CONFLICT (sku) DO NOTHING;
SQL
hba=/etc/postgresql/$ver/main/pg_hba.conf
if ! grep -Eq '^host[[:space:]]+{{ db }}[[:space:]]+app[[:space:]]' "$hba"; then
  printf '\n# the application on the LAN (site standard)\nhost    %s    app    192.168.54.0/24    scram-sha-256\n' '{{ db }}' >> "$hba"
fi
pg_ctlcluster "$ver" main reload
[ "$(runuser -u postgres -- psql -X -At -d {{ db }} -c "SELECT count(*) FROM items WHERE sku LIKE '{{ token }}-%'")" = "{{ rows }}" ]
[ "$(runuser -u postgres -- psql -X -Atc "SELECT count(*) FROM pg_roles WHERE rolreplication AND rolname <> 'postgres'")" = 0 ]
[ "$(runuser -u postgres -- psql -X -Atc 'SELECT pg_is_in_recovery()')" = f ]
if ss -ltnH 'sport = :5432' | grep -v -e '127\.0\.0\.1:' -e '\[::1\]:' | grep -q .; then
  echo "PostgreSQL already listens beyond localhost" >&2
  exit 1
fi
pg_lsclusters

#!/bin/bash
# Starting condition on `pg1` (stage 2, after setup/server.sh): the application's role `app`
# (password {{ app_password }}), its database {{ db }} and table `items` with {{ rows }} seeded
# rows ({{ token }}-0001 ...). No replication role.
set -eu
cd /
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
[ "$(runuser -u postgres -- psql -X -At -d {{ db }} -c "SELECT count(*) FROM items WHERE sku LIKE '{{ token }}-%'")" = "{{ rows }}" ]
[ "$(runuser -u postgres -- psql -X -Atc "SELECT count(*) FROM pg_roles WHERE rolreplication AND rolname <> 'postgres'")" = 0 ]

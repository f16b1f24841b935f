#!/bin/bash
# Oracle, pg1 (the primary): listen on the LAN as well, a replication role `replicator` with
# its password, and one pg_hba.conf line that admits it for replication from pg2's address
# only (scram-sha-256). wal_level = replica and max_wal_senders = 10 are already PostgreSQL's
# defaults. listen_addresses needs a restart of the cluster.
set -eu
cd /
ver=$(pg_lsclusters -h | awk '$2 == "main" { print $1; exit }')
[ -n "$ver" ]
pg_conftool "$ver" main set listen_addresses '*'
runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'replicator') THEN
    CREATE ROLE replicator WITH REPLICATION LOGIN;
  END IF;
END
$$;
ALTER ROLE replicator WITH REPLICATION LOGIN PASSWORD '{{ repl_password }}';
SQL
hba=/etc/postgresql/$ver/main/pg_hba.conf
line='host    replication     replicator      192.168.54.11/32        scram-sha-256'
if ! grep -qF "$line" "$hba"; then
  printf '\n# streaming replication: the standby pg2 only\n%s\n' "$line" >> "$hba"
fi
systemctl enable postgresql.service
pg_ctlcluster "$ver" main restart
for _ in $(seq 1 90); do
  runuser -u postgres -- psql -X -Atc 'SELECT 1' >/dev/null 2>&1 && break
  sleep 1
done
runuser -u postgres -- psql -X -Atc 'SHOW listen_addresses'
ss -ltn 'sport = :5432'

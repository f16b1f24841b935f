#!/bin/bash
# Oracle, pg2 (the standby): the replication password in the postgres user's ~/.pgpass,
# then the empty default cluster is stopped, its data directory emptied and refilled with
# pg_basebackup from pg1 as `replicator`; -R writes standby.signal and primary_conninfo, so
# the cluster starts as a streaming hot standby. pg2 listens on the LAN for read-only
# clients. Safe to run again: every run takes a fresh base backup.
set -eu
cd /
ver=$(pg_lsclusters -h | awk '$2 == "main" { print $1; exit }')
datadir=$(pg_lsclusters -h | awk '$2 == "main" { print $6; exit }')
[ -n "$ver" ] && [ -d "$datadir" ]
pg_conftool "$ver" main set listen_addresses '*'

home=$(getent passwd postgres | cut -d: -f6)
umask 077
printf '192.168.54.10:5432:replication:replicator:%s\n' '{{ repl_password }}' > "$home/.pgpass"
chown postgres:postgres "$home/.pgpass"
chmod 0600 "$home/.pgpass"
umask 022

pg_ctlcluster "$ver" main stop >/dev/null 2>&1 || true
find "$datadir" -mindepth 1 -delete
runuser -u postgres -- "/usr/lib/postgresql/$ver/bin/pg_basebackup" \
  -h 192.168.54.10 -p 5432 -U replicator -w -D "$datadir" -R -X stream -c fast
ls -l "$datadir/standby.signal"
systemctl enable postgresql.service
pg_ctlcluster "$ver" main start
for _ in $(seq 1 120); do
  [ "$(runuser -u postgres -- psql -X -Atc 'SELECT status FROM pg_stat_wal_receiver' 2>/dev/null)" = streaming ] && break
  sleep 1
done
runuser -u postgres -- psql -X -Atc 'SELECT pg_is_in_recovery()'
runuser -u postgres -- psql -X -Atc 'SELECT status, sender_host FROM pg_stat_wal_receiver'
runuser -u postgres -- psql -X -At -d {{ db }} -c "SELECT count(*) FROM items WHERE sku LIKE '{{ token }}-%'"

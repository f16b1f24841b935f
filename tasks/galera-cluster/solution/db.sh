#!/bin/bash
# Oracle, on db1 (stage 1), then db2 (stage 2) and db3 (stage 3): the same script.
# 1. /etc/mysql/mariadb.conf.d/60-galera.cnf: wsrep on with the galera-4 provider, the
#    cluster {{ cluster }} of the three LAN addresses, this node's address and name, SST by
#    rsync, row binlog format, InnoDB, interleaved auto-increment locks, pc.recovery on, and
#    bind-address 0.0.0.0 (the [galera] group is read after 50-server.cnf's 127.0.0.1).
# 2. db1 bootstraps the cluster (galera_new_cluster: its data, {{ db }} and app, is the
#    cluster's); db2 and db3 are started normally and join it, their own default data
#    replaced by a state snapshot from the cluster.
# 3. mariadb.socket (socket activation on 3306, enabled by the package) is disabled: after
#    a reboot it held 3306, so clients hung in the handshake and every start failed in
#    galera_recovery (its --wsrep-recover run binds 3306 itself).
# 4. Coming back after every node reboots: a graceful shutdown deletes gvwstate.dat, so
#    pc.recovery alone restores nothing; only grastate.dat's safe_to_bootstrap flag on the
#    node that left last says which one may start a new cluster. mariadb.service is no
#    longer started at boot by itself; galera-autostart.service runs
#    /usr/local/sbin/galera-autostart instead: galera_new_cluster where safe_to_bootstrap is 1,
#    otherwise `systemctl start mariadb` again every few seconds until it has joined. When
#    the nodes stopped in the same instant none may have the flag; on db1 only, after 4
#    minutes without a primary component while both peers are up (their Galera, MariaDB or
#    SSH port answers; each is in its own join loop, or it would have formed a primary),
#    and with a clean shutdown position of its own, db1 takes the flag and bootstraps.
#    That position is read once, before the first start: a start that finds no primary
#    component leaves seqno -1 behind (the node ran), so a later read would never see it.
set -eu
host=$(hostname)
case "$host" in
  db1) ip=192.168.66.11 ;;
  db2) ip=192.168.66.12 ;;
  db3) ip=192.168.66.13 ;;
  *) echo "not db1, db2 or db3" >&2; exit 1 ;;
esac

systemctl stop mariadb.service
cat > /etc/mysql/mariadb.conf.d/60-galera.cnf <<CNF
#
# * Galera: the three-node cluster {{ cluster }}
#
[galera]
wsrep_on                 = ON
wsrep_provider           = /usr/lib/galera/libgalera_smm.so
wsrep_cluster_name       = {{ cluster }}
wsrep_cluster_address    = gcomm://192.168.66.11,192.168.66.12,192.168.66.13
wsrep_node_address       = $ip
wsrep_node_name          = $host
wsrep_sst_method         = rsync
wsrep_provider_options   = "pc.recovery=TRUE"
binlog_format            = row
default_storage_engine   = InnoDB
innodb_autoinc_lock_mode = 2

# Allow server to accept connections on all interfaces (the LAN); accounts are matched by
# address (app@'192.168.66.%'), so no reverse DNS lookup per connection.
bind-address = 0.0.0.0
skip-name-resolve
CNF

cat > /usr/local/sbin/galera-autostart <<'SH'
#!/bin/bash
# Bring this MariaDB Galera node up at boot (galera-autostart.service). The node that
# left the cluster last (safe_to_bootstrap: 1 in grastate.dat) bootstraps a new primary
# component; the others start mariadb.service until they have joined it (a joiner that
# finds no primary component gives up after wsrep's 30 s wait). With --last-resort (db1
# only): when after 240 s no node has bootstrapped although both peers are up,
# and this node was shut down cleanly (a seqno in grastate.dat at boot, before the first
# start attempt rewrote it to -1), take the flag and bootstrap.
set -u
grastate=/var/lib/mysql/grastate.dat
peers="192.168.66.11 192.168.66.12 192.168.66.13"
self=$(ip -o -4 addr show | awk '{ print $4 }' | cut -d/ -f1)
last_resort=no
[ "${1:-}" = --last-resort ] && last_resort=yes
declare -A seen=()
start=$SECONDS
safe() { grep -Eq '^safe_to_bootstrap:[[:space:]]*1' "$grastate" 2>/dev/null; }
clean_seqno() {
  local s
  s=$(sed -n 's/^seqno:[[:space:]]*//p' "$grastate" 2>/dev/null)
  [ -n "$s" ] && [ "$s" != -1 ]
}
# read before the first start attempt: a failed join leaves seqno -1 in grastate.dat
shut_down_cleanly=no
clean_seqno && shut_down_cleanly=yes
echo "at boot: $(tr '\n' ' ' < "$grastate" 2>/dev/null) (clean shutdown: $shut_down_cleanly)"
while :; do
  if systemctl is-active --quiet mariadb.service; then
    echo "mariadb is running"
    exit 0
  fi
  if safe; then
    echo "safe_to_bootstrap: 1 here: bootstrapping the cluster"
    galera_new_cluster && exit 0
  else
    systemctl start mariadb.service && { echo "joined the cluster"; exit 0; }
  fi
  for p in $peers; do
    printf '%s\n' $self | grep -qxF "$p" && continue
    # up: its sshd answers (the Galera ports are open only for the short gcomm phase of
    # a join attempt, after galera_recovery's minutes under emulation: rarely both at once)
    for port in 4567 3306 22; do
      timeout 3 bash -c "exec 3<>/dev/tcp/$p/$port" 2>/dev/null && { seen[$p]=1; break; }
    done
  done
  echo "no primary component yet after $((SECONDS - start)) s; peers seen up: ${!seen[*]}"
  if [ "$last_resort" = yes ] && [ $((SECONDS - start)) -ge 240 ] && [ "${#seen[@]}" -ge 2 ] && [ "$shut_down_cleanly" = yes ]; then
    echo "no primary component after $((SECONDS - start)) s, both peers waiting, none safe to bootstrap: db1 bootstraps"
    sed -i -E 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$grastate"
    galera_new_cluster && exit 0
  fi
  sleep 5
done
SH
chmod 0755 /usr/local/sbin/galera-autostart
extra=""
[ "$host" = db1 ] && extra=" --last-resort"
cat > /etc/systemd/system/galera-autostart.service <<UNIT
[Unit]
Description=Start this MariaDB Galera node at boot (bootstrap where safe_to_bootstrap is set)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart=/usr/local/sbin/galera-autostart$extra

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl disable mariadb.service
# The package enables socket activation (mariadb.socket on 3306): after a reboot systemd
# holds 3306, so clients hang in the handshake and galera_recovery's --wsrep-recover run,
# which binds 3306 itself, fails every start. The autostart alone starts mariadb.
if systemctl cat mariadb.socket >/dev/null 2>&1; then
  systemctl disable --now mariadb.socket
fi
systemctl enable galera-autostart.service

if [ "$host" = db1 ]; then
  galera_new_cluster
else
  systemctl start mariadb.service
fi
for _ in $(seq 1 300); do
  [ "$(mariadb -N -B -e "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2)" = Synced ] && break
  sleep 1
done
mariadb -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_cluster_status', 'wsrep_local_state_comment', 'wsrep_incoming_addresses')"
mariadb -N -B -e "SELECT count(*) FROM {{ db }}.items WHERE sku LIKE '{{ token }}-%'"
cat /var/lib/mysql/grastate.dat

#!/bin/bash
# Oracle, on r1 then r2 and r3 (the same script): redis-server on the LAN address as well
# as loopback, with requirepass and masterauth (any node may become a replica after a
# failover), r2 and r3 replicas of r1; a sentinel on each node monitoring r1 as
# {{ master }} with quorum 2, the password for the data nodes (auth-pass) and a 5 s
# down-after period. Both files stay owned by redis (640): sentinel and CONFIG REWRITE
# rewrite them. Settings are replaced, not appended twice, so the script can run again.
set -eu
case "$(hostname)" in
  r1) ip=192.168.63.11 ;;
  r2) ip=192.168.63.12 ;;
  r3) ip=192.168.63.13 ;;
  *) echo "not r1, r2 or r3" >&2; exit 1 ;;
esac
master_ip=192.168.63.11
conf=/etc/redis/redis.conf
sconf=/etc/redis/sentinel.conf

systemctl stop redis-sentinel.service
sed -i -E '/^[[:space:]]*(bind|requirepass|masterauth|replicaof|slaveof)[[:space:]]/d' "$conf"
{
  echo "bind 127.0.0.1 -::1 $ip"
  echo "requirepass {{ password }}"
  echo "masterauth {{ password }}"
  if [ "$ip" != "$master_ip" ]; then echo "replicaof $master_ip 6379"; fi
} >> "$conf"

sed -i -E '/^[[:space:]]*sentinel[[:space:]]+(monitor|auth-pass|down-after-milliseconds|failover-timeout|parallel-syncs|config-epoch|leader-epoch|known-replica|known-slave|known-sentinel)[[:space:]]+{{ master }}[[:space:]]/Id' "$sconf"
cat >> "$sconf" <<CONF
sentinel monitor {{ master }} $master_ip 6379 2
sentinel auth-pass {{ master }} {{ password }}
sentinel down-after-milliseconds {{ master }} 5000
sentinel failover-timeout {{ master }} 60000
sentinel parallel-syncs {{ master }} 1
CONF
chown redis:redis "$conf" "$sconf"
chmod 0640 "$conf" "$sconf"

systemctl enable redis-server.service redis-sentinel.service
systemctl restart redis-server.service
export REDISCLI_AUTH='{{ password }}'
for _ in $(seq 1 60); do
  [ "$(redis-cli -h "$ip" PING 2>/dev/null)" = PONG ] && break
  sleep 0.5
done
if [ "$ip" != "$master_ip" ]; then
  for _ in $(seq 1 120); do
    redis-cli -h "$ip" INFO replication | tr -d '\r' | grep -qx 'master_link_status:up' && break
    sleep 1
  done
fi
systemctl start redis-sentinel.service
unset REDISCLI_AUTH
for _ in $(seq 1 60); do
  [ "$(redis-cli -h "$ip" -p 26379 SENTINEL get-master-addr-by-name {{ master }} 2>/dev/null | head -n 1)" = "$master_ip" ] && break
  sleep 0.5
done
REDISCLI_AUTH='{{ password }}' redis-cli -h "$ip" INFO replication | tr -d '\r' | grep -E '^(role|master_host|master_link_status|connected_slaves):'
REDISCLI_AUTH='{{ password }}' redis-cli -h "$ip" GET {{ key }}
redis-cli -h "$ip" -p 26379 SENTINEL get-master-addr-by-name {{ master }}

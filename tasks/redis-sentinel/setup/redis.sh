#!/bin/bash
# Starting condition on r1, r2 and r3 (the same script): redis-server and redis-sentinel
# installed through the package mirror, enabled and running with Debian's default
# configuration, except that the sample `mymaster` lines are taken out of
# /etc/redis/sentinel.conf (the sentinel monitors nothing). redis-server listens on
# 127.0.0.1 (and ::1) only, without a password; on r1 the key {{ key }} holds {{ value }},
# saved to disk. Three standalone servers, no replication.
set -eu
export DEBIAN_FRONTEND=noninteractive
host=$(hostname)
case "$host" in
  r1|r2|r3) ;;
  *) echo "unexpected host name '$host'" >&2; exit 1 ;;
esac
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-sentinel >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends redis-server redis-sentinel redis-tools
fi
conf=/etc/redis/sentinel.conf
sed -i '/^[[:space:]]*sentinel[[:space:]].*[[:space:]]mymaster\([[:space:]]\|$\)/Id' "$conf"
chown redis:redis "$conf" /etc/redis/redis.conf
chmod 0640 "$conf" /etc/redis/redis.conf
systemctl enable redis-server.service redis-sentinel.service >/dev/null 2>&1
systemctl restart redis-server.service
systemctl restart redis-sentinel.service
for _ in $(seq 1 50); do
  [ "$(redis-cli -h 127.0.0.1 -p 6379 PING 2>/dev/null)" = PONG ] &&
    [ "$(redis-cli -h 127.0.0.1 -p 26379 PING 2>/dev/null)" = PONG ] && break
  sleep 0.3
done
[ "$(redis-cli -h 127.0.0.1 -p 6379 PING)" = PONG ]
[ "$(redis-cli -h 127.0.0.1 -p 26379 PING)" = PONG ]
if [ "$host" = r1 ]; then
  [ "$(redis-cli -h 127.0.0.1 SET {{ key }} {{ value }})" = OK ]
  [ "$(redis-cli -h 127.0.0.1 SAVE)" = OK ]
  [ "$(redis-cli -h 127.0.0.1 GET {{ key }})" = "{{ value }}" ]
fi
redis-cli -h 127.0.0.1 INFO replication | tr -d '\r' | grep -qx 'role:master'
if [ -n "$(redis-cli -h 127.0.0.1 -p 26379 SENTINEL masters)" ]; then
  echo "the sentinel still monitors a master" >&2
  exit 1
fi
if ss -ltnH 'sport = :6379' | grep -v -e '127\.0\.0\.1:' -e '\[::1\]:' | grep -q .; then
  echo "redis-server listens beyond localhost" >&2
  exit 1
fi

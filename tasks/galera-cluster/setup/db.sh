#!/bin/bash
# Starting condition on db1, db2 and db3 (the same script): MariaDB and the Galera 4
# provider (Debian's mariadb-server, galera-4, rsync) installed through the package mirror,
# mariadb.service enabled and running with Debian's configuration: bound to 127.0.0.1
# (50-server.cnf), wsrep off (60-galera.cnf all comments), root by unix socket. Three
# independent servers. On db1 only: the database {{ db }}, its table `items` with {{ rows }}
# seeded rows ({{ token }}-0001 ...) and the user app@'192.168.66.%' (password
# {{ app_password }}) with every privilege on {{ db }}. db2 and db3 hold no {{ db }} and no app.
set -eu
export DEBIAN_FRONTEND=noninteractive
host=$(hostname)
case "$host" in
  db1|db2|db3) ;;
  *) echo "unexpected host name '$host'" >&2; exit 1 ;;
esac
if ! command -v mariadbd >/dev/null 2>&1 || [ ! -e /usr/lib/galera/libgalera_smm.so ] || ! command -v rsync >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends mariadb-server galera-4 rsync
fi
[ -e /usr/lib/galera/libgalera_smm.so ] || { echo "galera-4 did not install /usr/lib/galera/libgalera_smm.so" >&2; exit 1; }
command -v galera_new_cluster >/dev/null || { echo "no galera_new_cluster" >&2; exit 1; }
systemctl enable mariadb.service >/dev/null 2>&1
systemctl start mariadb.service
for _ in $(seq 1 120); do
  mariadb -N -B -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 1
done
mariadb -N -B -e 'SELECT VERSION()'
if [ "$host" = db1 ]; then
  mariadb -v <<'SQL'
CREATE DATABASE IF NOT EXISTS {{ db }};
USE {{ db }};
CREATE TABLE IF NOT EXISTS {{ db }}.items (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  sku VARCHAR(80) NOT NULL UNIQUE,
  qty INT NOT NULL,
  added TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
) ENGINE=InnoDB;
INSERT IGNORE INTO {{ db }}.items (sku, qty)
  SELECT CONCAT('{{ token }}-', LPAD(seq, 4, '0')), (seq * 37) % 100 + 1 FROM seq_1_to_{{ rows }};
CREATE USER IF NOT EXISTS 'app'@'192.168.66.%' IDENTIFIED BY '{{ app_password }}';
ALTER USER 'app'@'192.168.66.%' IDENTIFIED BY '{{ app_password }}';
GRANT ALL PRIVILEGES ON {{ db }}.* TO 'app'@'192.168.66.%';
SQL
  [ "$(mariadb -N -B -e "SELECT count(*) FROM {{ db }}.items WHERE sku LIKE '{{ token }}-%'")" = "{{ rows }}" ]
else
  [ "$(mariadb -N -B -e "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '{{ db }}'")" = 0 ]
fi
[ "$(mariadb -N -B -e "SELECT @@wsrep_on")" = 0 ]
if ss -ltnH 'sport = :3306' | grep -v -e '127\.0\.0\.1:' -e '\[::1\]:' | grep -q .; then
  echo "MariaDB already listens beyond localhost" >&2
  exit 1
fi
ss -ltn 'sport = :3306'

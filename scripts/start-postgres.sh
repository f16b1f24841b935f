#!/usr/bin/env bash
# Start (creating it if absent) a throwaway PostgreSQL cluster for tests, or stop it.
#
# Usage: scripts/start-postgres.sh DIR [PORT]      start; prints the URL on stdout
#        scripts/start-postgres.sh --stop DIR      stop it by its pid file
#
# Contract:
# - The cluster lives in DIR/data (log: DIR/postgres.log); it listens on 127.0.0.1:PORT
#   (default port 55432) and on a Unix socket in DIR/sock (reachable from other network
#   namespaces, where 127.0.0.1 is not the host's), and trusts every local connection
#   (test use only). Superuser `postgres`; database `testbed_test` is created if absent.
# - Idempotent: an already running cluster in DIR on PORT is reused; running it on another
#   port is an error (exit 1).
# - The only line on stdout is the URL
#   postgresql+psycopg://postgres@127.0.0.1:PORT/testbed_test ; progress goes to stderr.
# - Run as root, the server runs as the `postgres` OS user (DIR is chowned to it, so DIR's
#   parents must be traversable by that user, e.g. under /tmp); otherwise as the caller.
# - `--stop` sends SIGINT (fast shutdown) to the pid in DIR/data/postmaster.pid and waits
#   up to 60 s for it to exit; nothing running is not an error.
# - PostgreSQL binaries: $PG_BINDIR, else the newest /usr/lib/postgresql/*/bin, else PATH.
set -euo pipefail

log() { echo "start-postgres: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { echo "usage: $0 DIR [PORT] | $0 --stop DIR" >&2; exit 2; }

stop=0
if [ "${1:-}" = "--stop" ]; then stop=1; shift; fi
[ $# -ge 1 ] || usage
dir=$1
port=${2:-55432}
case "$port" in ''|*[!0-9]*) usage ;; esac
data="$dir/data"
pidfile="$data/postmaster.pid"

running_pid() {
  # The postmaster pid from the pid file, if that process is alive.
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

if [ "$stop" -eq 1 ]; then
  if ! pid=$(running_pid); then
    log "no server running in $data"
    exit 0
  fi
  log "stopping postgres pid $pid"
  kill -INT "$pid"
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || { log "stopped"; exit 0; }
    sleep 0.1
  done
  die "postgres pid $pid did not exit within 60 s"
fi

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
fi
if [ -z "$bindir" ]; then
  bindir=$(dirname "$(command -v initdb || die "initdb not found; install postgresql")")
fi
[ -x "$bindir/initdb" ] || die "no initdb in $bindir"

as_owner=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || die "running as root but there is no 'postgres' user"
  as_owner=(runuser -u postgres --)
fi
run() { "${as_owner[@]}" "$@"; }

mkdir -p "$dir" "$dir/sock"
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir" "$dir/sock"; fi

if [ ! -f "$data/PG_VERSION" ]; then
  log "creating cluster in $data"
  run "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale >&2
  echo "include_if_exists = 'testbed.conf'" >>"$data/postgresql.conf"
fi

if pid=$(running_pid); then
  running_port=$(sed -n 4p "$pidfile")
  [ "$running_port" = "$port" ] || die "already running in $data on port $running_port"
  log "already running (pid $pid) on port $port"
else
  run tee "$data/testbed.conf" >/dev/null <<EOF
# Written by scripts/start-postgres.sh on every start.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/sock'
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  log "starting on 127.0.0.1:$port"
  run "$bindir/pg_ctl" -D "$data" -l "$dir/postgres.log" -w -t 60 start >&2 \
    || die "pg_ctl start failed; see $dir/postgres.log"
fi

psql=("$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtA)
exists=$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'testbed_test'")
if [ "$exists" != "1" ]; then
  log "creating database testbed_test"
  "${psql[@]}" -c "CREATE DATABASE testbed_test" >&2
fi

echo "postgresql+psycopg://postgres@127.0.0.1:$port/testbed_test"

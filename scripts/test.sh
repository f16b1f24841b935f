#!/usr/bin/env bash
# The test suite CI runs, from a fresh Debian 12 machine (root): set up the host, lint and
# type-check, start a throwaway PostgreSQL, build (or reuse) the debian-12 image, run the
# unit tests, then the VM tests inside a private network namespace (scripts/netns-run),
# three at a time, then `scripts/validate-tasks --ci` (the smoke set and the tasks changed
# since tasks/VALIDATION.md's last run, each on its first release). VM tests marked `long`
# (the release matrix, routers and the other images they need) are scripts/test-long.sh's:
# they would not fit CI's hour beside these.
#
# Usage: scripts/test.sh [extra pytest args for both runs]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/host-env.sh
# one line per phase with the seconds since the start, so a slow CI run shows where it went
phase() { echo "== test.sh: $1 at +${SECONDS}s"; }

phase lint
ruff check .
mypy

pg_dir=$(mktemp -d /tmp/testbed-pg.XXXXXX)
chmod 755 "$pg_dir"
cleanup() { scripts/start-postgres.sh --stop "$pg_dir" || true; rm -rf "$pg_dir"; }
trap cleanup EXIT
TESTBED_TEST_PG_URL=$(scripts/start-postgres.sh "$pg_dir" 55432)
export TESTBED_TEST_PG_URL
export TESTBED_TEST_PG_SOCKET_URL="postgresql+psycopg://postgres@/testbed_test?host=$pg_dir/sock&port=55432"

phase image
testbed image build debian-12
phase unit
pytest -m "not vm" -q -p no:cacheprovider -n 2 "$@"
phase vm
mkdir -p artifacts
TESTBED_NETNS_LOGS="$PWD/artifacts/qemu-logs" scripts/netns-run pytest -m "vm and not long" -q -p no:cacheprovider -n 3 --dist load \
  --durations=15 --junitxml=artifacts/vm-tests.xml "$@"
phase validate
# task validation: the smoke set and the tasks changed since tasks/VALIDATION.md's last run
scripts/validate-tasks --ci --db "sqlite:///$PWD/artifacts/validate.db" --report artifacts/VALIDATION.md

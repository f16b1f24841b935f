#!/usr/bin/env bash
# The whole test suite from a fresh Debian 12 machine (root): set up the host, lint and
# type-check, start a throwaway PostgreSQL, build (or reuse) the debian-12 image, run the
# unit tests while the rest of the Debian release matrix builds, then the VM tests inside a
# private network namespace (scripts/netns-run), three at a time.
#
# Usage: scripts/test.sh [extra pytest args for both runs]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-host.sh --no-daemons
export PATH="$PWD/.venv/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin"  # mkfs, sfdisk, libvirtd live in sbin

ruff check .
mypy

pg_dir=$(mktemp -d /tmp/testbed-pg.XXXXXX)
chmod 755 "$pg_dir"
cleanup() { scripts/start-postgres.sh --stop "$pg_dir" || true; rm -rf "$pg_dir"; }
trap cleanup EXIT
TESTBED_TEST_PG_URL=$(scripts/start-postgres.sh "$pg_dir" 55432)
export TESTBED_TEST_PG_URL
export TESTBED_TEST_PG_SOCKET_URL="postgresql+psycopg://postgres@/testbed_test?host=$pg_dir/sock&port=55432"

testbed image build debian-12
# The rest of the release matrix builds while the unit tests run (each image's packages come
# from Debian's mirror; an unchanged recipe is never rebuilt).
mkdir -p artifacts
(
  for image in debian-11 debian-13 debian-12-openrc debian-13-cloud debian-13-cloud-uefi frr-router frr-router-console; do
    nice -n 10 testbed image build "$image" || exit 1
  done
) > artifacts/image-builds.log 2>&1 &
builds=$!

pytest -m "not vm" -q -p no:cacheprovider "$@"
if ! wait "$builds"; then
  echo "test.sh: image builds failed (artifacts/image-builds.log):" >&2
  tail -n 40 artifacts/image-builds.log >&2
  exit 1
fi
scripts/netns-run pytest -m vm -q -p no:cacheprovider -n 3 --dist load \
  --junitxml=artifacts/vm-tests.xml "$@"

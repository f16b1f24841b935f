#!/usr/bin/env bash
# The VM tests too heavy for every CI run (pytest marker `long`): the Debian release matrix
# (debian-11, -12, -13, debian-12-openrc, debian-13-cloud with BIOS and UEFI), check
# primitives on systemd and OpenRC, frr-router labs, the console-managed router and the
# OpenAI agent solving a task. Builds the images they need first (outside the namespace:
# a build needs Debian's mirror), then runs them inside scripts/netns-run, three at a time.
# Takes about 40 minutes on a 2-core machine under TCG.
#
# Usage: scripts/test-long.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/host-env.sh

for image in debian-12 debian-11 debian-13 debian-12-openrc debian-13-cloud debian-13-cloud-uefi \
  frr-router frr-router-console; do
  testbed image build "$image"
done
mkdir -p artifacts
scripts/netns-run pytest -m "vm and long" -q -p no:cacheprovider -n 3 --dist load \
  --durations=15 --junitxml=artifacts/vm-long-tests.xml "$@"

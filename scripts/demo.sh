#!/usr/bin/env bash
# From a fresh Debian 12 machine (root) to a finished demo: set up the host, build the
# debian-12 image (cached after the first time), then inside a private network namespace
# (scripts/netns-run) check the host, bring up the two-node lab, show that the client
# reaches the web node by name, and tear the lab down.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/host-env.sh
testbed image build debian-12
exec scripts/netns-run bash scripts/demo-inner.sh

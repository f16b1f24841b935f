#!/bin/bash
# Starting condition on `client`: redis-cli (redis-tools), through the package mirror, for
# the checks and the agent.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v redis-cli >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends redis-tools
fi
redis-cli --version

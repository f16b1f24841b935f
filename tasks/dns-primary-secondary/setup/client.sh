#!/bin/bash
# Starting condition on `client`: dig (bind9-dnsutils, through the package mirror), for
# the checks and the agent.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v dig >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends bind9-dnsutils
fi
dig -v

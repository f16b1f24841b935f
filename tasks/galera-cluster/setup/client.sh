#!/bin/bash
# Starting condition on `client`: the MariaDB client (`mariadb`), through the package mirror,
# for the checks and the agent.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v mariadb >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends mariadb-client
fi
mariadb --version

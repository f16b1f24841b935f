#!/bin/bash
# Oracle: the service's own file, and the vendor file no longer fighting it (its lines for
# these two keys are commented out; its other settings stay). Applied now.
set -eu
sed -i -E 's/^[[:space:]]*(vm\.max_map_count|net\.core\.somaxconn)[[:space:]]*=/# overridden by 60-search.conf: &/' \
  /etc/sysctl.d/99-vendor-defaults.conf
cat > /etc/sysctl.d/60-search.conf <<'CONF'
# search service
vm.max_map_count = {{ map_count }}
net.core.somaxconn = {{ somaxconn }}
CONF
sysctl -p /etc/sysctl.d/60-search.conf

#!/bin/bash
# Starting condition: accounts {{ batch }} and analyst (bash login shells); a vendor
# limits file that caps {{ batch }} at 1024 open files and disables analyst's core dumps.
set -eu
for u in {{ batch }} analyst; do
  id -u "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
mkdir -p /etc/security/limits.d
cat > /etc/security/limits.d/90-vendor.conf <<'CONF'
# Vendor defaults shipped with the batch scheduler (do not remove: analyst's core limit is
# required by the compliance baseline).
{{ batch }}    soft    nofile    1024
{{ batch }}    hard    nofile    1024
analyst        hard    core      0
CONF
[ "$(runuser -l {{ batch }} -c 'ulimit -Hn')" = 1024 ]

#!/bin/bash
# Oracle: take the vendor's batch lines out (keeping its other limits) and give the account
# its own file; pam_limits reads it at the next session.
set -eu
sed -i -E '/^{{ batch }}[[:space:]]/d' /etc/security/limits.d/90-vendor.conf
cat > /etc/security/limits.d/60-{{ batch }}.conf <<'CONF'
# batch jobs of {{ batch }}: many open files
{{ batch }}    soft    nofile    {{ nofile_soft }}
{{ batch }}    hard    nofile    {{ nofile_hard }}
{{ batch }}    hard    nproc     {{ nproc }}
CONF
runuser -l {{ batch }} -c 'ulimit -Sn; ulimit -Hn; ulimit -Hu'

#!/bin/bash
# Oracle: ask for user quotas in /etc/fstab (systemd's fstab generator then runs quotacheck
# and quotaon for this mount at every boot), remount, build the quota file, switch quotas
# on and set the limits (1 KiB blocks).
set -eu
sed -i -E 's|^(/srv/projects\.img[[:space:]]+/srv/projects[[:space:]]+ext4[[:space:]]+)([^[:space:]]+)|\1\2,usrquota|' /etc/fstab
grep -E '^/srv/projects\.img' /etc/fstab
mount -o remount /srv/projects
quotacheck -cum /srv/projects
quotaon -u /srv/projects
setquota -u {{ user }} {{ soft_kib }} {{ hard_kib }} 0 0 /srv/projects
repquota -u /srv/projects

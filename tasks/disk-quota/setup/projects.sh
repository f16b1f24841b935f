#!/bin/bash
# Starting condition: the quota tools and e2fsprogs (package mirror; minbase images have no
# mkfs.ext4), a 256 MiB ext4 image loop-mounted on /srv/projects from /etc/fstab without
# quota options, a project directory per user ({{ user }}'s with a file in it) and a shared
# directory anyone may write to.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v setquota >/dev/null 2>&1 || ! command -v mkfs.ext4 >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends quota e2fsprogs
fi
id -u {{ user }} >/dev/null 2>&1 || useradd --create-home --shell /bin/bash {{ user }}
id -u devteam >/dev/null 2>&1 || useradd --create-home --shell /bin/bash devteam
if [ ! -e /srv/projects.img ]; then
  mkdir -p /srv/projects
  truncate -s 256M /srv/projects.img
  mkfs.ext4 -q -L projects /srv/projects.img
fi
grep -qE '^/srv/projects\.img[[:space:]]' /etc/fstab \
  || printf '/srv/projects.img\t/srv/projects\text4\tloop,nofail\t0\t2\n' >> /etc/fstab
mountpoint -q /srv/projects || mount /srv/projects
install -d -o {{ user }} -g {{ user }} -m 0750 /srv/projects/{{ user }}
install -d -o devteam -g devteam -m 0750 /srv/projects/devteam
install -d -m 1777 /srv/projects/shared
printf 'quarterly report\n' > /srv/projects/{{ user }}/report.txt
chown {{ user }}:{{ user }} /srv/projects/{{ user }}/report.txt
sync
findmnt /srv/projects

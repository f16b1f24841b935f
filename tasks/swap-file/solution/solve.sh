#!/bin/bash
# Oracle: allocate, protect, format and enable the file; an fstab line for boot; the
# swappiness in its own sysctl.d file.
set -eu
fallocate -l {{ swap }} /swapfile || dd if=/dev/zero of=/swapfile bs=1M count={{ swap_mib }} status=none
chmod 0600 /swapfile
mkswap /swapfile >/dev/null
swapon /swapfile
grep -qE '^/swapfile[[:space:]]' /etc/fstab || printf '/swapfile\tnone\tswap\tsw\t0\t0\n' >> /etc/fstab
printf 'vm.swappiness = {{ swappiness }}\n' > /etc/sysctl.d/60-swappiness.conf
sysctl -p /etc/sysctl.d/60-swappiness.conf
swapon --show

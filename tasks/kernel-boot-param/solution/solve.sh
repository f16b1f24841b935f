#!/bin/bash
# Oracle: the vendor drop-in is read after /etc/default/grub, so the parameter goes there
# (the last value on the command line wins); regenerate grub.cfg, set the live mode too.
set -eu
sed -i 's/transparent_hugepage=[a-z]*/transparent_hugepage={{ mode }}/' /etc/default/grub.d/60-vendor-tuning.cfg
grep -q 'transparent_hugepage={{ mode }}' /etc/default/grub.d/60-vendor-tuning.cfg
update-grub 2>&1 | tail -n 3
grep -m1 -E '^[[:space:]]*linux[[:space:]]' /boot/grub/grub.cfg
echo {{ mode }} > /sys/kernel/mm/transparent_hugepage/enabled
cat /sys/kernel/mm/transparent_hugepage/enabled

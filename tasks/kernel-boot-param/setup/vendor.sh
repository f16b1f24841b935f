#!/bin/bash
# Starting condition: the vendor's GRUB drop-in appends transparent_hugepage=always to the
# kernel command line; grub.cfg is regenerated from it (update-grub) and the live mode is
# set to match, as if the machine had booted with it.
set -eu
[ -d /sys/kernel/mm/transparent_hugepage ] || { echo "this kernel has no transparent huge pages" >&2; exit 1; }
mkdir -p /etc/default/grub.d
cat > /etc/default/grub.d/60-vendor-tuning.cfg <<'CFG'
# Vendor tuning profile (throughput), applied after /etc/default/grub.
GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX transparent_hugepage=always"
CFG
update-grub 2>&1 | tail -n 3
grep -m1 -E '^[[:space:]]*linux[[:space:]]' /boot/grub/grub.cfg | grep -q 'transparent_hugepage=always'
echo always > /sys/kernel/mm/transparent_hugepage/enabled
cat /sys/kernel/mm/transparent_hugepage/enabled

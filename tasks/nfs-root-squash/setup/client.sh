#!/bin/bash
# Starting condition, client: the NFS client tools installed through the package mirror,
# the account carol (uid {{ uid }}, as on server), nothing mounted and no /mnt/share.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v mount.nfs >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends nfs-common
fi
modinfo nfs >/dev/null
id carol >/dev/null 2>&1 || useradd -m -u {{ uid }} -s /bin/bash carol
# statd on fixed ports, as on server (a v3 mount starts it; a reboot would move it otherwise)
if [ -f /etc/nfs.conf ] && ! grep -q '^# testbed: fixed ports' /etc/nfs.conf; then
  printf '\n# testbed: fixed ports\n[statd]\nport=32765\noutgoing-port=32766\n[lockd]\nport=32768\nudp-port=32768\n' >> /etc/nfs.conf
fi
if [ -f /etc/default/nfs-common ]; then
  sed -i -E 's/^STATDOPTS=.*/STATDOPTS="--port 32765 --outgoing-port 32766"/' /etc/default/nfs-common
fi
echo 'options lockd nlm_udpport=32768 nlm_tcpport=32768' > /etc/modprobe.d/lockd.conf
! grep -qs '/mnt/share' /etc/fstab

#!/bin/bash
# Starting condition, server: nfs-kernel-server installed through the package mirror (Debian's
# defaults: nothing exported, its side services on fixed ports as for a firewalled server, so
# that a restart or a reboot brings their sockets back where they were), the shared tree
# /srv/share with the team's files (a drop directory anyone may write to: mode 0777, not
# sticky, since fs.protected_regular refuses root-squashed root's O_CREAT in a sticky
# world-writable directory owned by someone else), and the account carol (uid {{ uid }}),
# the same on both machines.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v exportfs >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends nfs-kernel-server
fi
modinfo nfsd >/dev/null
pin_ports() {  # mountd 20048, statd 32765/32766, lockd 32768 (nfs.conf; /etc/default for 11)
  if [ -f /etc/nfs.conf ] && ! grep -q '^# testbed: fixed ports' /etc/nfs.conf; then
    printf '\n# testbed: fixed ports\n[mountd]\nport=20048\n[statd]\nport=32765\noutgoing-port=32766\n[lockd]\nport=32768\nudp-port=32768\n' >> /etc/nfs.conf
  fi
  if [ -f /etc/default/nfs-kernel-server ] && ! grep -q -- '--port 20048' /etc/default/nfs-kernel-server; then
    sed -i -E 's/^RPCMOUNTDOPTS="?([^"]*)"?$/RPCMOUNTDOPTS="\1 --port 20048"/' /etc/default/nfs-kernel-server
  fi
  if [ -f /etc/default/nfs-common ]; then
    sed -i -E 's/^STATDOPTS=.*/STATDOPTS="--port 32765 --outgoing-port 32766"/' /etc/default/nfs-common
  fi
  echo 'options lockd nlm_udpport=32768 nlm_tcpport=32768' > /etc/modprobe.d/lockd.conf
  if [ -d /proc/sys/fs/nfs ]; then
    sysctl -q -w fs.nfs.nlm_tcpport=32768 fs.nfs.nlm_udpport=32768 || true
  fi
  if systemctl -q is-active rpc-statd.service; then systemctl restart rpc-statd.service; fi
}
id carol >/dev/null 2>&1 || useradd -m -u {{ uid }} -s /bin/bash carol
install -d -m 0777 -o root -g root /srv/share
chmod 0777 /srv/share
printf 'shared drop directory of the build team (%s)\n' '{{ token }}' > /srv/share/README
install -d -m 0755 /srv/share/docs
printf 'release notes\n' > /srv/share/docs/notes.txt
install -d -m 0755 -o carol -g carol /srv/share/carol
printf 'draft\n' > /srv/share/carol/draft.txt
chown carol:carol /srv/share/carol/draft.txt
pin_ports
systemctl restart nfs-server.service
systemctl is-enabled nfs-server.service >/dev/null
# nothing is exported yet
! grep -qsE '^[[:space:]]*/' /etc/exports

#!/bin/bash
# Oracle, client: mount server:/srv/share on /mnt/share from fstab. Both machines reboot
# together and server may serve later than client boots (no network-online wait on these
# guests), so the entry is an automount: mounted at first access, whenever that is.
set -eu
install -d -m 0755 /mnt/share
sed -i '\#[[:space:]]/mnt/share[[:space:]]#d' /etc/fstab
echo 'server:/srv/share /mnt/share nfs rw,_netdev,nofail,x-systemd.automount,x-systemd.mount-timeout=60 0 0' >> /etc/fstab
systemctl daemon-reload
systemctl restart remote-fs.target
for _ in $(seq 1 30); do
  [ -f /mnt/share/README ] && break
  sleep 2
done
cat /mnt/share/README
findmnt /mnt/share

#!/bin/bash
# Oracle, server: export /srv/share read-write to client's LAN address only, root squashed
# (root_squash is the default; written out), and serve it now and at boot.
set -eu
sed -i '\#^[[:space:]]*/srv/share[[:space:]]#d' /etc/exports
echo '/srv/share 192.168.60.20(rw,sync,no_subtree_check,root_squash)' >> /etc/exports
systemctl enable nfs-server.service
systemctl restart nfs-server.service
exportfs -ra
exportfs -v

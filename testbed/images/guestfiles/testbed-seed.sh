#!/bin/sh
# testbed-seed: apply the per-node seed that the harness passes through QEMU fw_cfg
# (entry opt/testbed/seed: a tar of files to unpack over /). Applied once per distinct
# seed, so an agent's later edits to seeded files survive reboots. On images without
# systemd-networkd, testbed-seed-ifupdown turns the seed's per-NIC .network files into
# ifupdown stanzas right after a new seed is unpacked.
seed=/sys/firmware/qemu_fw_cfg/by_name/opt/testbed/seed/raw
state=/var/lib/testbed/seed.sha256
modprobe qemu_fw_cfg 2>/dev/null
if [ -r "$seed" ]; then
    sum=$(sha256sum "$seed" | cut -d' ' -f1)
    if [ "$(cat "$state" 2>/dev/null)" != "$sum" ]; then
        tar -xf "$seed" -C / --no-same-owner --no-overwrite-dir
        [ -x /usr/local/sbin/testbed-seed-ifupdown ] && /usr/local/sbin/testbed-seed-ifupdown
        [ -x /etc/testbed/firstboot.sh ] && /etc/testbed/firstboot.sh
        mkdir -p /var/lib/testbed
        echo "$sum" > "$state"
    fi
fi
[ -s /etc/hostname ] && hostname "$(cat /etc/hostname)"
# sshd refuses to start without host keys: make some if no seed supplied them.
ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1 || ssh-keygen -A
exit 0

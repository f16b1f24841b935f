#!/bin/sh
# Runs inside the debootstrapped root (chroot) once, to make it a bootable testbed guest.
set -eu
echo testbed > /etc/hostname
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > /etc/hosts
printf '/dev/vda\t/\text4\tdefaults,noatime\t0\t1\n' > /etc/fstab
ln -sf /usr/share/zoneinfo/Etc/UTC /etc/localtime
passwd -l root
mkdir -p /root/.ssh && chmod 700 /root/.ssh
cat > /etc/ssh/sshd_config.d/10-testbed.conf <<'CONF'
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxSessions 10
CONF
rm -f /etc/ssh/ssh_host_*
mkdir -p /etc/systemd/network /etc/systemd/system.conf.d
# Bounded stop jobs: a service that ignores SIGTERM must not hold a reboot for 90 s.
printf '[Manager]\nDefaultTimeoutStopSec=15s\n' > /etc/systemd/system.conf.d/10-testbed.conf
systemctl enable systemd-networkd.service testbed-seed.service ssh.service
systemctl mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer \
    man-db.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service 2>/dev/null || true
apt-get clean
rm -rf /var/lib/apt/lists/* /var/log/*.log /tmp/* /var/tmp/*
: > /etc/machine-id

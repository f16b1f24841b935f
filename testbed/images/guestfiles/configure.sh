#!/bin/sh
# Runs inside the bootstrapped root (chroot, nothing mounted) once, to make it a bootable
# testbed guest. Environment (set by testbed/images/build.py):
#   TESTBED_INIT       systemd | openrc
#   TESTBED_PROVISION  seed | cloud-init
#   TESTBED_ROOT       the root file system's fstab spec (/dev/vda, UUID=...)
#   TESTBED_ESP        the EFI system partition's fstab spec, or empty (no ESP)
set -eu
echo testbed > /etc/hostname
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > /etc/hosts
printf '%s\t/\text4\tdefaults,noatime\t0\t1\n' "$TESTBED_ROOT" > /etc/fstab
if [ -n "${TESTBED_ESP:-}" ]; then
    mkdir -p /boot/efi
    printf '%s\t/boot/efi\tvfat\tumask=0077,nofail\t0\t2\n' "$TESTBED_ESP" >> /etc/fstab
fi
ln -sf /usr/share/zoneinfo/Etc/UTC /etc/localtime
passwd -l root
mkdir -p /root/.ssh && chmod 700 /root/.ssh
mkdir -p /etc/ssh/sshd_config.d
cat > /etc/ssh/sshd_config.d/10-testbed.conf <<'CONF'
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxSessions 10
CONF
# sshd must accept its configuration on this release (keywords differ across OpenSSH
# versions): check it with a throw-away host key, then remove every host key.
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f /tmp/testbed-check-key
/usr/sbin/sshd -t -h /tmp/testbed-check-key
# Every harness command arrives over SSH, and a run opens several connections (after a
# restore, after the agent): make each cheap under emulation, where a process start costs
# tens of milliseconds. (1) No dynamic motd: pam_motd's `motd=/run/motd.dynamic` runs
# run-parts over /etc/update-motd.d (five processes) at every login, for a banner no
# harness session shows. (2) sshd without re-exec (`-r`, through Debian's SSHD_OPTS, which
# both the systemd unit and the init script read) where this OpenSSH still has it (before
# 9.8, which always starts sshd-session instead): a connection is a fork of the listener,
# not a fresh sshd that loads its libraries, configuration and host keys again. Together
# they cut a connection and its first command from about 0.53 s to 0.22 s on debian-12
# under TCG; the guest gives up sshd's per-connection address-space re-randomization.
if [ -f /etc/pam.d/sshd ]; then
    sed -i '/pam_motd\.so.*motd=\/run\/motd\.dynamic/d' /etc/pam.d/sshd
fi
if [ ! -e /usr/lib/openssh/sshd-session ] && [ -f /etc/default/ssh ] &&
    /usr/sbin/sshd -t -r -h /tmp/testbed-check-key 2>/dev/null; then
    echo 'SSHD_OPTS="-r"' >> /etc/default/ssh
fi
rm -f /tmp/testbed-check-key /tmp/testbed-check-key.pub /etc/ssh/ssh_host_*

case "$TESTBED_INIT" in
systemd)
    mkdir -p /etc/systemd/network /etc/systemd/system.conf.d
    # Bounded stop jobs: a service that ignores SIGTERM must not hold a reboot for 90 s.
    printf '[Manager]\nDefaultTimeoutStopSec=15s\n' > /etc/systemd/system.conf.d/10-testbed.conf
    units="systemd-networkd.service ssh.service"
    [ "$TESTBED_PROVISION" = seed ] && units="$units testbed-seed.service"
    # shellcheck disable=SC2086
    systemctl enable $units
    systemctl mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer \
        man-db.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service 2>/dev/null || true
    ;;
openrc)
    [ "$TESTBED_PROVISION" = seed ] && rc-update add testbed-seed sysinit
    rc-update add ssh default
    # a login prompt on the serial console, as systemd's serial-getty gives for console=ttyS0
    grep -q '^T0:' /etc/inittab || echo 'T0:23:respawn:/sbin/getty -L ttyS0 115200 vt100' >> /etc/inittab
    # ifupdown brings up the loopback (systemd does that by itself) and what the seed writes
    # under interfaces.d (see testbed-seed-ifupdown)
    grep -q '^iface lo ' /etc/network/interfaces ||
        printf 'auto lo\niface lo inet loopback\n' >> /etc/network/interfaces
    grep -q '^source /etc/network/interfaces.d/' /etc/network/interfaces ||
        echo 'source /etc/network/interfaces.d/*' >> /etc/network/interfaces
    mkdir -p /etc/network/interfaces.d
    ;;
*)
    echo "configure: unknown TESTBED_INIT '$TESTBED_INIT'" >&2
    exit 2
    ;;
esac

if [ "$TESTBED_PROVISION" = cloud-init ]; then
    # Only the NoCloud seed ISO is ever attached: look nowhere else (each datasource probe
    # costs seconds under emulation).
    printf 'datasource_list: [ NoCloud, None ]\n' > /etc/cloud/cloud.cfg.d/90-testbed.cfg
fi

apt-get clean
rm -rf /var/lib/apt/lists/* /var/log/*.log /tmp/* /var/tmp/* /run/sshd
: > /etc/machine-id

#!/usr/bin/env bash
# Inside of a simulated remote libvirt lab host (see tests/vm/remote_host.py).
#
# Usage: scripts/netns-run tests/vm/remote_host_inner.sh ADDRESS/PREFIX CACHE_DIR STATE_DIR
#
# Runs as the COMMAND of a nested scripts/netns-run, so it already has its own network,
# mount and PID namespaces and its own libvirtd. It:
# - waits (up to 10 s) for the interface `uplink` (the peer of a veth moved in from the
#   outer namespace), gives it ADDRESS/PREFIX and brings it and lo up;
# - mounts a private tmpfs at CACHE_DIR (the remote's image cache) so that nothing written
#   there is visible outside this mount namespace;
# - generates an ed25519 host key and an sshd config in STATE_DIR and runs sshd in the
#   foreground (it dies with the namespace). The host public key is published last, as
#   STATE_DIR/host_key.pub (atomically), for the client to put in its known_hosts.
# STATE_DIR/authorized_keys must be written by the caller (before or after start).
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 ADDRESS/PREFIX CACHE_DIR STATE_DIR" >&2
  exit 2
fi
cidr=$1
cache_dir=$2
state=$3
address=${cidr%/*}

if [ "${TESTBED_NETNS_INNER:-}" != "1" ]; then
  echo "remote_host_inner: must run as the command of scripts/netns-run" >&2
  exit 2
fi

for _ in $(seq 1 100); do
  ip link show uplink >/dev/null 2>&1 && break
  sleep 0.1
done
if ! ip link show uplink >/dev/null 2>&1; then
  echo "remote_host_inner: interface uplink did not appear within 10 s" >&2
  exit 1
fi
ip link set lo up
ip addr add "$cidr" dev uplink
ip link set uplink up

# The mount points themselves are created on the shared file system (empty directories);
# what is mounted on them stays in this mount namespace (netns-run made it private).
mkdir -p "$cache_dir"
mount -t tmpfs -o mode=0755 tmpfs "$cache_dir"
mount --make-private "$cache_dir"
mkdir -p /run/sshd
mount -t tmpfs -o mode=0755 tmpfs /run/sshd
mount --make-private /run/sshd

mkdir -p "$state"
rm -f "$state/host_key" "$state/host_key.pub" "$state/host_key.tmp" "$state/host_key.tmp.pub"
ssh-keygen -q -t ed25519 -N '' -C "remote-lab-host-$address" -f "$state/host_key.tmp"
mv "$state/host_key.tmp" "$state/host_key"
touch "$state/authorized_keys"
cat >"$state/sshd_config" <<EOF
ListenAddress $address
Port 22
HostKey $state/host_key
AuthorizedKeysFile $state/authorized_keys
PidFile $state/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
MaxSessions 20
MaxStartups 50:30:100
UseDNS no
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
/usr/sbin/sshd -t -f "$state/sshd_config"
mv "$state/host_key.tmp.pub" "$state/host_key.pub"
exec /usr/sbin/sshd -D -e -f "$state/sshd_config"

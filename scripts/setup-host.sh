#!/usr/bin/env bash
# Prepare a Debian 12 host (as root) for testbed: Debian packages, the Python package in
# ./.venv, and — unless --no-daemons — virtlogd/libvirtd when no init system runs them.
# Idempotent: packages already present are not reinstalled.
#
# Usage: scripts/setup-host.sh [--no-daemons]
set -euo pipefail
cd "$(dirname "$0")/.."

start_daemons=1
[ "${1:-}" = "--no-daemons" ] && start_daemons=0

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-host: run as root (it installs packages and manages libvirt)" >&2
  exit 2
fi

packages=(
  qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-dev libvirt-clients pkg-config
  mmdebstrap dnsmasq-base iproute2 iptables nftables e2fsprogs openssh-client openssh-server util-linux
  fdisk dosfstools mtools ovmf busybox
  postgresql chromium chromium-driver python3-venv python3-dev gcc libc6-dev squid
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-host: installing ${missing[*]}"
  # Without an init system, packages must not start their daemons (sshd, postgresql, ...)
  # in the host's own namespace: deny service starts for this install unless a policy exists.
  policy=/usr/sbin/policy-rc.d
  added_policy=0
  if [ "$(cat /proc/1/comm 2>/dev/null)" != "systemd" ] && [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    added_policy=1
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ "$added_policy" -eq 1 ]; then rm -f "$policy"; trap - EXIT; fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.testbed-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup-host: installing the Python package into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e '.[dev]'
  touch "$stamp"
fi

if [ "$start_daemons" -eq 1 ] && [ "$(cat /proc/1/comm 2>/dev/null)" != "systemd" ]; then
  # No init system: start the daemons ourselves (they define no network by themselves;
  # the persistent `default` network is not autostarted).
  if ! pgrep -x virtlogd >/dev/null; then virtlogd -d; fi
  if ! pgrep -x libvirtd >/dev/null; then libvirtd -d; fi
fi
echo "setup-host: ready"

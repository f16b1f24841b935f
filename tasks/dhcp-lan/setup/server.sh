#!/bin/bash
# Starting condition on `server`: its LAN interface eth1 has the static address
# 192.168.{{ lan }}.1/24 (systemd-networkd, persistent; the topology leaves the link
# unaddressed, and client stays so: it is a DHCP client), and dnsmasq is installed through
# the package mirror but stopped, disabled and unconfigured: nothing serves DHCP on the LAN.
set -eu
export DEBIAN_FRONTEND=noninteractive
cat > /etc/systemd/network/05-lan.network <<'NET'
# Office LAN (192.168.{{ lan }}.0/24): this host is its DHCP server, so its address is static.
[Match]
Name=eth1

[Network]
Address=192.168.{{ lan }}.1/24
ConfigureWithoutCarrier=yes
LinkLocalAddressing=no
IPv6AcceptRA=no
NET
if ! { networkctl reload && networkctl reconfigure eth1; } >/dev/null 2>&1; then
  systemctl restart systemd-networkd.service
fi
for _ in $(seq 1 50); do
  ip -4 -o addr show dev eth1 | grep -q ' 192\.168\.{{ lan }}\.1/24 ' && break
  sleep 0.2
done
ip -4 -o addr show dev eth1 | grep -q ' 192\.168\.{{ lan }}\.1/24 ' || { echo "eth1 has no 192.168.{{ lan }}.1/24" >&2; ip -4 addr >&2; exit 1; }

if ! dpkg-query -W -f '${Status}' dnsmasq 2>/dev/null | grep -q 'ok installed'; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends dnsmasq
fi
systemctl disable --now dnsmasq.service >/dev/null 2>&1
systemctl is-active --quiet dnsmasq.service && { echo "dnsmasq still runs" >&2; exit 1; }
if ss -H -uln | awk '{ print $4 }' | grep -Eq ':67$'; then
  echo "something already listens on UDP 67" >&2
  ss -uln >&2
  exit 1
fi
exit 0

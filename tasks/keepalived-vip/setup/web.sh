#!/bin/bash
# Starting condition on lb1 and lb2 (the same script on both): nginx serves a one-line page
# naming the host; keepalived is installed through the package mirror but has no
# configuration and is disabled and stopped; the site's host firewall (nftables, enabled)
# lets in only management traffic (eth0), SSH, HTTP and ICMP, so VRRP (IP protocol 112)
# from the peer is dropped until someone allows it.
set -eu
export DEBIAN_FRONTEND=noninteractive
host=$(hostname)
case "$host" in
  lb1|lb2) ;;
  *) echo "unexpected host name '$host'" >&2; exit 1 ;;
esac
if ! command -v keepalived >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends keepalived
fi
systemctl disable --now keepalived.service >/dev/null 2>&1 || true
rm -f /etc/keepalived/keepalived.conf

printf 'served-by %s\n' "$host" > /var/www/html/index.html
chmod 0644 /var/www/html/index.html
systemctl enable nginx.service >/dev/null 2>&1
systemctl restart nginx.service

cat > /etc/nftables.conf <<'NFT'
#!/usr/sbin/nft -f
# Host firewall of the web nodes (site standard): management, SSH, HTTP and ICMP in.

flush ruleset

table inet filter {
	chain input {
		type filter hook input priority filter; policy drop;
		ct state established,related accept
		ct state invalid drop
		iif "lo" accept
		iifname "eth0" accept comment "management"
		meta l4proto { 1, 58 } accept comment "ICMP, ICMPv6"
		tcp dport { 22, 80 } accept
	}

	chain forward {
		type filter hook forward priority filter; policy drop;
	}

	chain output {
		type filter hook output priority filter; policy accept;
	}
}
NFT
nft -c -f /etc/nftables.conf
systemctl enable nftables.service >/dev/null 2>&1
systemctl restart nftables.service

for _ in $(seq 1 50); do
  [ "$(curl -s --noproxy '*' --max-time 2 http://127.0.0.1/)" = "served-by $host" ] && break
  sleep 0.2
done
[ "$(curl -s --noproxy '*' --max-time 2 http://127.0.0.1/)" = "served-by $host" ]
nft list chain inet filter input >/dev/null
! systemctl is-active --quiet keepalived.service

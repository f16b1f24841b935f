#!/bin/sh
# testbed-seed-ifupdown: turn the seed's systemd-networkd files (*-testbed-*.network under
# /etc/systemd/network: MACAddress, Address or DHCP, [Route] Destination/Gateway; forwarding
# comes from the seed's sysctl.d file) into ifupdown stanzas under
# /etc/network/interfaces.d/, for images whose network is ifupdown (OpenRC). ifupdown names
# interfaces, so each MAC is looked up under /sys/class/net; the kernel names are stable
# (net.ifnames=0). A DHCP stanza needs a DHCP client in the image (testbed's seeds always
# carry static addresses).
# Called by testbed-seed once per new seed; `networking` brings the stanzas up.
# TESTBED_NETWORKD, TESTBED_IFUPDOWN and TESTBED_SYS_NET override the three directories
# (tests run the script against a directory tree of their own).
set -u
networkd=${TESTBED_NETWORKD:-/etc/systemd/network}
ifupdown=${TESTBED_IFUPDOWN:-/etc/network/interfaces.d}
sysnet=${TESTBED_SYS_NET:-/sys/class/net}
command -v udevadm >/dev/null 2>&1 && udevadm settle --timeout=15 2>/dev/null
mkdir -p "$ifupdown"
for unit in "$networkd"/*-testbed-*.network; do
    [ -e "$unit" ] || continue
    mac=$(sed -n 's/^MACAddress=//p' "$unit" | tr 'A-F' 'a-f')
    ifname=
    for dev in "$sysnet"/*; do
        [ "$(cat "$dev/address" 2>/dev/null)" = "$mac" ] && ifname=${dev##*/}
    done
    if [ -z "$ifname" ]; then
        echo "testbed-seed-ifupdown: no interface has MAC $mac ($unit)" >&2
        continue
    fi
    stanza=$ifupdown/testbed-$ifname
    awk -v ifname="$ifname" '
        /^\[Route\]/ { section = "route"; next }
        /^\[/ { section = ""; next }
        /^Address=/ { address = substr($0, 9) }
        section == "route" && /^Destination=/ { dest = substr($0, 13) }
        section == "route" && /^Gateway=/ { routes[++n] = dest " via " substr($0, 9) }
        END {
            print "# written by testbed-seed-ifupdown from " FILENAME
            print "auto " ifname
            if (address != "") {
                print "iface " ifname " inet static"
                print "    address " address
            } else {
                print "iface " ifname " inet dhcp"
            }
            for (i = 1; i <= n; i++) print "    up ip route replace " routes[i]
        }' "$unit" > "$stanza"
done
exit 0

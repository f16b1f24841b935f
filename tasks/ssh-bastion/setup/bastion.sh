#!/bin/bash
# Starting condition on `bastion`: the jump account {{ jump }} (login shell /usr/sbin/nologin,
# no key yet: it is only for forwarding) and the bastion policy, an sshd drop-in that
# refuses root logins from the LAN subnet(s). The harness logs in over the management
# network (eth0), which the Match does not cover.
set -eu
id -u {{ jump }} >/dev/null 2>&1 ||
  useradd --create-home --shell /usr/sbin/nologin --comment "SSH jump account" {{ jump }}
# no password, and not "locked" either ('!'), which sshd refuses when PAM is off
usermod -p '*' {{ jump }}
install -d -o {{ jump }} -g {{ jump }} -m 0700 /home/{{ jump }}/.ssh

# the LAN subnet(s): the connected routes of every interface but eth0 (management) and lo
lan=$(ip -4 route show scope link |
  awk '{ d = ""; for (i = 1; i < NF; i++) if ($i == "dev") d = $(i + 1); if (d != "eth0" && d != "lo" && d != "") print $1 }' |
  paste -sd, -)
[ -n "$lan" ] || { echo "bastion: no LAN subnet found" >&2; exit 1; }
cat > /etc/ssh/sshd_config.d/20-bastion.conf <<CONF
# Bastion policy: nobody logs in as root from the LAN. People come in with their own
# account; hops to internal servers go through the jump account.
Match Address $lan
    PermitRootLogin no
CONF
sshd -t
systemctl reload ssh.service
sleep 1
sshd -T -C "user=root,host=client,addr=${lan%%/*}" 2>/dev/null | grep -qx 'permitrootlogin no'

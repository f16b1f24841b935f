#!/bin/bash
# Oracle: one site source, NTP for the LAN and localhost, the local clock at stratum 10 as
# the fallback; the distribution's pool line goes.
set -eu
cat > /etc/chrony/chrony.conf <<'CONF'
# Time server of the LAN 172.{{ lan }}.0.0/16
server 192.0.2.{{ upstream }} iburst
allow 172.{{ lan }}.0.0/16
allow 127.0.0.1
local stratum 10
driftfile /var/lib/chrony/chrony.drift
logdir /var/log/chrony
maxupdateskew 100.0
rtcsync
makestep 1 3
CONF
systemctl enable chrony.service
systemctl restart chrony.service
sleep 2
chronyc -n sources

#!/bin/bash
# Starting condition: a vendor sysctl file that sets both keys low (and one unrelated key),
# applied now, exactly as it is applied at boot.
set -eu
cat > /etc/sysctl.d/99-vendor-defaults.conf <<'CONF'
# Vendor defaults of the appliance image. Loaded last by name.
vm.max_map_count = 65530
net.core.somaxconn = 128
kernel.pid_max = 65536
CONF
sysctl -q -p /etc/sysctl.d/99-vendor-defaults.conf
[ "$(cat /proc/sys/vm/max_map_count)" = 65530 ]

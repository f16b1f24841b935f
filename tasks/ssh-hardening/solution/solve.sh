#!/bin/bash
# Oracle: the legacy drop-in, which sshd reads first, now carries the baseline; the
# configuration is tested before sshd reloads it (a reload keeps existing sessions).
set -eu
cat > /etc/ssh/sshd_config.d/05-legacy.conf <<'CONF'
# SSH baseline: keys only, root with keys only
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
MaxAuthTries {{ max_tries }}
X11Forwarding no
CONF
sshd -t
if [ -d /run/systemd/system ]; then systemctl reload ssh.service; else rc-service ssh reload; fi
sleep 1
sshd -T | grep -E '^(passwordauthentication|permitrootlogin|maxauthtries|x11forwarding) '

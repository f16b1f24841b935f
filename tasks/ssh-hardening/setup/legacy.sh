#!/bin/bash
# Starting condition: the admin account {{ admin }} with a key login; a legacy sshd drop-in
# that wins over the image's own (sshd takes the first value it reads) and allows password
# logins, root password logins, 10 attempts and X11 forwarding; sshd reloaded with it.
set -eu
id -u {{ admin }} >/dev/null 2>&1 || useradd --create-home --shell /bin/bash {{ admin }}
# a password, so that password logins would really work for this account
echo '{{ admin }}:Legacy-Passw0rd-{{ admin }}' | chpasswd
rm -f /root/{{ admin }}_ed25519 /root/{{ admin }}_ed25519.pub
ssh-keygen -q -t ed25519 -N '' -C "{{ admin }}@admin-laptop" -f /root/{{ admin }}_ed25519
install -d -o {{ admin }} -g {{ admin }} -m 0700 /home/{{ admin }}/.ssh
install -o {{ admin }} -g {{ admin }} -m 0600 /root/{{ admin }}_ed25519.pub /home/{{ admin }}/.ssh/authorized_keys

cat > /etc/ssh/sshd_config.d/05-legacy.conf <<'CONF'
# Settings of the old deployment (kept for the migration period)
PasswordAuthentication yes
PermitRootLogin yes
MaxAuthTries 10
X11Forwarding yes
CONF
sshd -t
if [ -d /run/systemd/system ]; then systemctl reload ssh.service; else rc-service ssh reload >/dev/null; fi
sleep 1
sshd -T | grep -qx 'passwordauthentication yes'

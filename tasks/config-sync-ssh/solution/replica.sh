#!/bin/bash
# Oracle, replica: a receiver that atomically replaces /etc/app/app.conf with what arrives on
# stdin (never with nothing), and root's authorized_keys entry for source's sync key, bound
# to it: from source's LAN address only, no pty/forwarding (restrict), forced command.
# The key is a throw-away test key of this oracle (solution/source.sh has its private half).
set -eu
cat > /usr/local/sbin/app-conf-receive <<'SH'
#!/bin/sh
# Forced command of source's app_sync key: stdin becomes /etc/app/app.conf. Whatever
# command the client asked for ($SSH_ORIGINAL_COMMAND) is ignored.
set -eu
umask 022
tmp=$(mktemp /etc/app/.app.conf.XXXXXX)
trap 'rm -f "$tmp"' EXIT
head -c 1048576 > "$tmp"
[ -s "$tmp" ] || { echo "app-conf-receive: refusing an empty app.conf" >&2; exit 1; }
chmod 0644 "$tmp"
mv -f "$tmp" /etc/app/app.conf
trap - EXIT
SH
chmod 0755 /usr/local/sbin/app-conf-receive
src=$(getent hosts source | awk '{ print $1; exit }')
[ -n "$src" ]
key='ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINxGKskqaUImPI0PGwftnf2f+8i7tjCjYBNeKzTp3ipg app-sync@source (test key)'
entry="from=\"$src\",restrict,command=\"/usr/local/sbin/app-conf-receive\" $key"
install -d -m 0700 /root/.ssh
touch /root/.ssh/authorized_keys
grep -qxF "$entry" /root/.ssh/authorized_keys || printf '%s\n' "$entry" >> /root/.ssh/authorized_keys
chmod 0600 /root/.ssh/authorized_keys

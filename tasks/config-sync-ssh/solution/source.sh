#!/bin/bash
# Oracle, source: the dedicated key (a throw-away test key, written as is: an oracle cannot
# carry a freshly generated public key to replica), replica's host key in known_hosts, a
# push script and a cron job that runs it every minute; then one push right away.
set -eu
install -d -m 0700 /root/.ssh
umask 077
cat > /root/.ssh/app_sync <<'KEY'
-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDcRirJKmlCJjyNDxsH7Z39n/vIu7Ywo2ATXis06d4qYAAAAKCFCI+IhQiP
iAAAAAtzc2gtZWQyNTUxOQAAACDcRirJKmlCJjyNDxsH7Z39n/vIu7Ywo2ATXis06d4qYA
AAAECT/iortfOgGLRHFEHvWxWcWDToeqaUzry9aiFHS03jN9xGKskqaUImPI0PGwftnf2f
+8i7tjCjYBNeKzTp3ipgAAAAGmFwcC1zeW5jQHNvdXJjZSAodGVzdCBrZXkpAQID
-----END OPENSSH PRIVATE KEY-----
KEY
printf '%s\n' 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINxGKskqaUImPI0PGwftnf2f+8i7tjCjYBNeKzTp3ipg app-sync@source (test key)' > /root/.ssh/app_sync.pub
umask 022
for _ in 1 2 3 4 5; do
  ssh-keyscan -T 15 -t ed25519 replica 2>/dev/null > /root/.ssh/known_hosts.new || true
  grep -q ' ssh-ed25519 ' /root/.ssh/known_hosts.new && break
  sleep 3
done
grep -q ' ssh-ed25519 ' /root/.ssh/known_hosts.new
touch /root/.ssh/known_hosts
cat /root/.ssh/known_hosts.new >> /root/.ssh/known_hosts
rm -f /root/.ssh/known_hosts.new
chmod 0600 /root/.ssh/known_hosts

cat > /usr/local/sbin/app-conf-push <<'SH'
#!/bin/sh
# Push /etc/app/app.conf to replica (run every minute by /etc/cron.d/app-conf-sync). The
# key is only good for this: replica runs its receiver whatever is asked.
exec 9>/run/app-conf-push.lock
flock -n 9 || exit 0
exec ssh -i /root/.ssh/app_sync -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=20 \
  root@replica < /etc/app/app.conf
SH
chmod 0755 /usr/local/sbin/app-conf-push
cat > /etc/cron.d/app-conf-sync <<'CRON'
# keep replica's /etc/app/app.conf in sync with this master copy
* * * * * root /usr/local/sbin/app-conf-push >/dev/null 2>&1
CRON
chmod 0644 /etc/cron.d/app-conf-sync
/usr/local/sbin/app-conf-push

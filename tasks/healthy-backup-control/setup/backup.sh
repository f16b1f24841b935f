#!/bin/bash
# Starting condition (healthy): application data in /srv/app; a backup script run by cron
# every five minutes that writes /var/backups/app/app-TIMESTAMP.tar.gz, keeps the last 12
# and logs to /var/log/app-backup.log; one backup made right now.
set -eu
mkdir -p /srv/app/data
for i in $(seq 1 20); do printf 'order %s\n' "$i" > "/srv/app/data/order-$i.txt"; done
cat > /usr/local/sbin/app-backup <<'SH'
#!/bin/sh
# Back up /srv/app: a dated archive in /var/backups/app, the last 12 kept, a line in the log.
set -eu
dest=/var/backups/app
mkdir -p "$dest"
stamp=$(date +%Y%m%d-%H%M%S)
tar -czf "$dest/app-$stamp.tar.gz" -C /srv app
ls -1t "$dest"/app-*.tar.gz | tail -n +13 | xargs -r rm -f
echo "$(date -Is) backup ok: $dest/app-$stamp.tar.gz ($(du -k "$dest/app-$stamp.tar.gz" | cut -f1) KiB)" >> /var/log/app-backup.log
SH
chmod 0755 /usr/local/sbin/app-backup
printf '# backups of /srv/app\n*/5 * * * * root /usr/local/sbin/app-backup\n' > /etc/cron.d/app-backup
/usr/local/sbin/app-backup
systemctl restart cron.service
systemctl is-active --quiet cron.service
ls /var/backups/app/app-*.tar.gz >/dev/null

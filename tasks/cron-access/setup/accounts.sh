#!/bin/bash
# Starting condition: users alice and carol in group ops, the contractor {{ contractor }},
# crontabs for alice and {{ contractor }}; no /etc/cron.allow or /etc/cron.deny, so every
# user may use crontab. Works on systemd and OpenRC guests (nothing here needs the daemon).
set -eu
getent group ops >/dev/null || groupadd ops
for u in alice carol {{ contractor }}; do
  id -u "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
usermod -aG ops alice
usermod -aG ops carol
rm -f /etc/cron.allow /etc/cron.deny

cat > /usr/local/bin/backup-report <<'SH'
#!/bin/sh
# nightly backup report of the ops team
date >> /tmp/backup-report.last
SH
chmod 0755 /usr/local/bin/backup-report
install -o {{ contractor }} -g {{ contractor }} -m 0755 /dev/null /home/{{ contractor }}/sync.sh
printf '#!/bin/sh\n# pulls the partner feed\nexit 0\n' > /home/{{ contractor }}/sync.sh

printf 'MAILTO=""\n15 2 * * * /usr/local/bin/backup-report\n' | crontab -u alice -
printf '*/10 * * * * /home/{{ contractor }}/sync.sh\n@reboot /home/{{ contractor }}/sync.sh --full\n' |
  crontab -u {{ contractor }} -
crontab -u alice -l | grep -q backup-report
crontab -u {{ contractor }} -l | grep -q sync.sh

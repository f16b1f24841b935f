#!/bin/bash
# Starting condition: aide installed through the package mirror (its daily timer/cron job
# off, so nothing scans on its own during the run), an application tree /srv/app, and a
# big, churning tree /data/archive (30 000 small files) that the policy excludes.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v aide >/dev/null 2>&1; then
  apt-get update -q
  # aide only: aide-common (recommended on 11, 12 and 13) registers some 200 config
  # snippets with ucf in its postinst: setup stayed busy over nine minutes under TCG with
  # it. The task needs none of them
  # (the oracle makes /etc/aide itself, as an agent must)
  apt-get install -y -q --no-install-recommends aide
fi
systemctl disable --now dailyaidecheck.timer >/dev/null 2>&1 || true
[ -e /etc/cron.daily/aide ] && chmod -x /etc/cron.daily/aide
rm -f /etc/aide/site.conf /var/lib/aide/site.db /var/lib/aide/site.db.new

mkdir -p /srv/app/bin /srv/app/conf /srv/app/static
for i in $(seq 1 40); do printf 'key%s = value%s\n' "$i" "$i" > "/srv/app/conf/part$i.ini"; done
for i in $(seq 1 200); do printf '<p>page %s</p>\n' "$i" > "/srv/app/static/page$i.html"; done
printf '#!/bin/sh\necho app\n' > /srv/app/bin/app && chmod 0755 /srv/app/bin/app
printf '#!/bin/sh\necho site tool\n' > /usr/local/bin/site-tool && chmod 0755 /usr/local/bin/site-tool

mkdir -p /data/archive
for d in $(seq -w 0 29); do
  mkdir -p "/data/archive/$d"
  (cd "/data/archive/$d" && seq -f 'record-%04g.dat' 1 1000 | xargs touch)
done
[ "$(find /data/archive -type f | wc -l)" -ge 30000 ]

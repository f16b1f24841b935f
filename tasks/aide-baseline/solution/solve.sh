#!/bin/bash
# Oracle: a configuration of its own that selects only the three trees (anchored regular
# expressions), initialised once and the new database put in place.
set -eu
mkdir -p /etc/aide
cat > /etc/aide/site.conf <<'CONF'
# AIDE policy of this host: /etc, /usr/local and /srv/app only
database_in=file:/var/lib/aide/site.db
database_out=file:/var/lib/aide/site.db.new
gzip_dbout=no
report_url=stdout
Site = p+u+g+s+m+sha256
/etc Site
/usr/local Site
/srv/app Site
CONF
mkdir -p /var/lib/aide
aide --config=/etc/aide/site.conf --init >/dev/null
mv -f /var/lib/aide/site.db.new /var/lib/aide/site.db
aide --config=/etc/aide/site.conf --check

#!/bin/bash
# Oracle: an allow list (root and the ops members) and the contractor's crontab removed.
set -eu
printf 'root\nalice\ncarol\n' > /etc/cron.allow
chmod 0644 /etc/cron.allow
crontab -r -u {{ contractor }}

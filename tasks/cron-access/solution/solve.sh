#!/bin/bash
# Oracle: the contractor's crontab removed, then an allow list (root and the ops members).
# The order matters: once cron.allow exists, Debian's `crontab -r -u USER` refuses a USER
# who is not allowed ("The user ... cannot use this program"), even for root.
set -eu
crontab -r -u {{ contractor }}
printf 'root\nalice\ncarol\n' > /etc/cron.allow
chmod 0644 /etc/cron.allow

#!/bin/bash
# Oracle: look (read-only): a fresh archive exists and the job is scheduled; reply.
set -eu
latest=$(ls -1t /var/backups/app/app-*.tar.gz | head -n 1)
[ $(( $(date +%s) - $(stat -c %Y "$latest") )) -le 900 ]
tar -tzf "$latest" | grep -q '^app/data/order-1.txt$'
grep -q app-backup /etc/cron.d/app-backup
printf 'verdict: no-fault\nnote: backups run every five minutes; the latest is %s.\n' "$latest" > /root/ticket-reply.txt

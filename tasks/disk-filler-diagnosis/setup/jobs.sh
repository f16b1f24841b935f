#!/bin/bash
# Starting condition: a 48 MiB tmpfs on /var/lib/reports, nearly full; four cron jobs
# (every minute) running one job runner with per-job settings; {{ culprit }} writes 1 MiB
# chunks into /var/lib/reports/.cache and keeps them, the others write small files into
# /var/lib/reports/out and keep three. Nothing names the culprit but its settings.
set -eu
if ! mountpoint -q /var/lib/reports; then
  mkdir -p /var/lib/reports
  mount -t tmpfs -o size=48m,mode=0755 reports /var/lib/reports
fi
mkdir -p /var/lib/reports/out /var/lib/reports/.cache /etc/jobs /usr/local/lib/jobs
printf 'region,revenue\nnorth,1200\nsouth,980\n' > /var/lib/reports/out/monthly-summary.csv

cat > /usr/local/lib/jobs/run-job <<'SH'
#!/bin/sh
# run-job NAME: one step of a periodic job, as configured in /etc/jobs/NAME.conf
# (OUTPUT_DIR, CHUNK_KB, KEEP: how many outputs to keep, 0 = all).
set -u
. "/etc/jobs/$1.conf"
mkdir -p "$OUTPUT_DIR"
dd if=/dev/urandom of="$OUTPUT_DIR/$(date +%s)-$$.part" bs=1024 count="$CHUNK_KB" status=none 2>/dev/null
if [ "$KEEP" -gt 0 ]; then
  ls -1t "$OUTPUT_DIR"/*.part 2>/dev/null | tail -n +"$((KEEP + 1))" | xargs -r rm -f
fi
SH
chmod 0755 /usr/local/lib/jobs/run-job

for job in logship report-gen thumbs db-dump; do
  if [ "$job" = "{{ culprit }}" ]; then
    printf 'OUTPUT_DIR=/var/lib/reports/.cache\nCHUNK_KB=1024\nKEEP=0\n' > "/etc/jobs/$job.conf"
  else
    printf 'OUTPUT_DIR=/var/lib/reports/out/%s\nCHUNK_KB=8\nKEEP=3\n' "$job" > "/etc/jobs/$job.conf"
  fi
  printf '# %s: periodic step\n* * * * * root /usr/local/lib/jobs/run-job %s\n' "$job" "$job" > "/etc/cron.d/$job"
done
# what has piled up already: 40 chunks of the culprit
for i in $(seq 1 40); do
  dd if=/dev/zero of="/var/lib/reports/.cache/1700000$i-1.part" bs=1M count=1 status=none
done
for job in logship report-gen thumbs db-dump; do /usr/local/lib/jobs/run-job "$job"; done
systemctl restart cron.service
[ "$(df --output=pcent /var/lib/reports | tail -n 1 | tr -dc 0-9)" -ge 80 ]

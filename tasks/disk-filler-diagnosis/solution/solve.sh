#!/bin/bash
# Oracle: the evidence is in the jobs' settings: one job writes 1 MiB chunks into a hidden
# directory and keeps them all. Report it (nothing else is changed).
set -eu
culprit=$(grep -l '^KEEP=0$' /etc/jobs/*.conf | head -n 1)
name=$(basename "$culprit" .conf)
dir=$(sed -n 's/^OUTPUT_DIR=//p' "$culprit")
printf 'job: /etc/cron.d/%s\ndirectory: %s\n' "$name" "$dir" > /root/diagnosis.txt
cat /root/diagnosis.txt

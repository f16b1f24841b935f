#!/bin/bash
# Oracle: ask nginx where its configuration breaks (nginx -t reads, it changes nothing), and
# write the report.
set -eu
out=$(nginx -t 2>&1 || true)
printf '%s\n' "$out"
place=$(printf '%s\n' "$out" | sed -n 's/.*\[emerg\] .* in \(\/[^ ]*\):\([0-9][0-9]*\)$/\1 \2/p' | head -n 1)
[ -n "$place" ]
printf 'file=%s line=%s\n' "${place% *}" "${place#* }" > /root/diagnosis.txt
cat /root/diagnosis.txt

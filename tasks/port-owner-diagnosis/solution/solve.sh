#!/bin/bash
# Oracle: read who listens (no change), and write the report.
set -eu
pid=$(ss -Hltnp "sport = :{{ port }}" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)
[ -n "$pid" ]
printf 'port: %s\npid: %s\nservice: %s\n' {{ port }} "$pid" {{ service }} > /root/diagnosis.txt
cat /root/diagnosis.txt

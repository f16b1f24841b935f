#!/bin/bash
# Oracle: look (read-only), find the page healthy, reply.
set -eu
curl -q -sS --noproxy '*' --max-time 10 -o /dev/null -w '%{http_code}\n' http://localhost/ | grep -qx 200
curl -q -sS --noproxy '*' --max-time 10 http://localhost/ | grep -q 'all systems operational'
printf 'verdict: no-fault\nnote: http://localhost/ answers 200 with the status page (all systems operational); nothing was changed.\n' \
  > /root/ticket-reply.txt

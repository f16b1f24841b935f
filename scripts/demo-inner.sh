#!/usr/bin/env bash
# The part of the demo that needs libvirt; run by scripts/demo.sh inside scripts/netns-run.
set -euo pipefail
testbed doctor || true
testbed lab up two-node --name demo
trap 'testbed lab down demo' EXIT
testbed lab exec demo client -- curl -sS -o /dev/null -w 'client -> web: HTTP %{http_code}\n' http://web/
testbed lab exec demo web -- systemctl is-active nginx

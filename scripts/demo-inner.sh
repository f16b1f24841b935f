#!/usr/bin/env bash
# The part of the demo that needs libvirt; run by scripts/demo.sh inside scripts/netns-run.
# Runs one starter task with the oracle agent (passes) and with the do-nothing agent
# (fails), then shows what was recorded.
set -uo pipefail
testbed doctor
testbed task list
testbed run tasks/web-port-conflict --agent oracle
echo "oracle run exit status: $? (0 = passed)"
testbed run tasks/web-port-conflict --agent noop
echo "noop run exit status: $? (1 = failed, as a do-nothing agent must)"
testbed runs list --limit 5
run_id=$(testbed runs list --limit 1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
testbed runs show "$run_id"
testbed reap

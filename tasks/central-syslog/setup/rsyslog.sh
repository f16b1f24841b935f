#!/bin/bash
# Starting condition on loghost and client (the same script): rsyslog installed through the
# package mirror, enabled and running with Debian's default configuration (local files
# only: no network input, no forwarding), and local logging shown to work.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v rsyslogd >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends rsyslog
fi
systemctl enable rsyslog.service >/dev/null 2>&1
systemctl restart rsyslog.service
mark="testbed-setup-$(date +%s)-$$"
for _ in $(seq 1 40); do
  logger -p user.notice -t setup "$mark"
  grep -qsF "$mark" /var/log/syslog /var/log/messages /var/log/user.log && break
  sleep 0.5
done
grep -qsF "$mark" /var/log/syslog /var/log/messages /var/log/user.log
! grep -rqsE '^[^#]*(imtcp|imudp|omfwd|@@?[A-Za-z0-9])' /etc/rsyslog.conf /etc/rsyslog.d
[ ! -e /var/log/remote ]

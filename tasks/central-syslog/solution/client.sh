#!/bin/bash
# Oracle, client: forward every facility and priority to loghost over TCP {{ port }}, through
# an in-memory queue that retries forever (nothing is lost while loghost is away).
set -eu
cat > /etc/rsyslog.d/90-forward-loghost.conf <<'CONF'
# Everything to the central log host, over TCP.
*.* action(type="omfwd" target="loghost" port="{{ port }}" protocol="tcp"
           queue.type="LinkedList" queue.size="10000"
           action.resumeRetryCount="-1" action.resumeInterval="5")
CONF
rsyslogd -N1
systemctl enable rsyslog.service
systemctl restart rsyslog.service
sleep 2
logger -p daemon.notice -t oracle "forwarding to loghost:{{ port }} configured"

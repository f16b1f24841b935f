#!/bin/bash
# Oracle, loghost: a TCP syslog input on {{ port }} bound to its own ruleset, which files each
# message by the sending host's name (path-sanitised) under /var/log/remote; the default
# ruleset never sees remote messages, so loghost's own files stay its own.
set -eu
cat > /etc/rsyslog.d/10-remote-input.conf <<'CONF'
# Central log host: syslog from other hosts over TCP {{ port }}, one file per host.
module(load="imtcp")
template(name="RemoteHostFile" type="string" string="/var/log/remote/%HOSTNAME:::secpath-replace%.log")
ruleset(name="remote") {
    action(type="omfile" dynaFile="RemoteHostFile" createDirs="on" dirCreateMode="0750" fileCreateMode="0640")
}
input(type="imtcp" port="{{ port }}" ruleset="remote")
CONF
mkdir -p /var/log/remote
rsyslogd -N1
systemctl enable rsyslog.service
systemctl restart rsyslog.service
for _ in $(seq 1 50); do
  ss -ltnH "sport = :{{ port }}" | grep -q . && break
  sleep 0.2
done
ss -ltnp "sport = :{{ port }}"

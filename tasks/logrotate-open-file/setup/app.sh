#!/bin/bash
# Starting condition: logrotate installed (through the package mirror if the image lacks
# it); a daemon `{{ app }}` (system user, systemd service) that opens its log once and
# appends "t=EPOCH seq=N" twice a second, reopening the file on SIGHUP; a few MiB of old
# log already there; no logrotate policy for it.
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! command -v logrotate >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends logrotate
fi

id -u {{ app }} >/dev/null 2>&1 ||
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin {{ app }}
install -d -o {{ app }} -g {{ app }} -m 0755 /var/log/{{ app }}

cat > /usr/local/bin/{{ app }} <<'PY'
#!/usr/bin/python3
"""{{ app }}: appends a status line to its log twice a second; SIGHUP reopens the log."""
import signal
import time

LOG = "/var/log/{{ app }}/{{ app }}.log"
handle = open(LOG, "a", buffering=1)


def reopen(_signum, _frame):
    global handle
    handle.close()
    handle = open(LOG, "a", buffering=1)


signal.signal(signal.SIGHUP, reopen)
seq = 0
while True:
    seq += 1
    handle.write(f"t={int(time.time())} seq={seq} status=ok queue=0\n")
    time.sleep(0.5)
PY
chmod 0755 /usr/local/bin/{{ app }}

install -d /usr/local/share/doc/{{ app }}
cat > /usr/local/share/doc/{{ app }}/README <<'TXT'
{{ app }} writes its log to /var/log/{{ app }}/{{ app }}.log. The file is opened once when
the daemon starts and kept open. Send SIGHUP (systemctl reload {{ app }}) to make it close
and reopen the log file, e.g. after the file was moved away.
TXT

cat > /etc/systemd/system/{{ app }}.service <<'UNIT'
[Unit]
Description={{ app }} daemon
After=network.target

[Service]
User={{ app }}
Group={{ app }}
ExecStart=/usr/local/bin/{{ app }}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT

# months of history already in the file
: > /var/log/{{ app }}/{{ app }}.log
seq 1 40000 | sed 's/^/t=1700000000 seq=/; s/$/ status=ok queue=0/' >> /var/log/{{ app }}/{{ app }}.log
chown {{ app }}:{{ app }} /var/log/{{ app }}/{{ app }}.log
rm -f /etc/logrotate.d/{{ app }}

systemctl daemon-reload
systemctl enable --now {{ app }}.service >/dev/null 2>&1
# wait (bounded) until the daemon has written its first line
for _ in $(seq 1 100); do
  tail -n 1 /var/log/{{ app }}/{{ app }}.log | grep -qv '^t=1700000000 ' && break
  sleep 0.2
done
systemctl is-active --quiet {{ app }}.service
tail -n 1 /var/log/{{ app }}/{{ app }}.log | grep -qv '^t=1700000000 '

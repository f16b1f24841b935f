#!/bin/bash
# Starting condition: three services that look alike (python3 http.server on 127.0.0.1),
# {{ service }} on {{ port }}, metrics-relay on {{ decoy }}, cache-warmer on {{ decoy2 }};
# supervised by systemd or OpenRC, whichever this guest runs.
set -eu

add_daemon() {  # add_daemon NAME PORT: a service running python3 -m http.server on PORT
  local name=$1 port=$2
  install -d "/srv/$name"
  echo "$name" > "/srv/$name/index.html"
  if [ -d /run/systemd/system ]; then
    cat > "/etc/systemd/system/$name.service" <<UNIT
[Unit]
Description=$name
After=network.target

[Service]
ExecStart=/usr/bin/python3 -m http.server $port --bind 127.0.0.1 --directory /srv/$name
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
    systemctl daemon-reload
    systemctl enable --now "$name.service" >/dev/null 2>&1
  else
    cat > "/etc/init.d/$name" <<RC
#!/sbin/openrc-run
description="$name"
command="/usr/bin/python3"
command_args="-m http.server $port --bind 127.0.0.1 --directory /srv/$name"
command_background=true
pidfile="/run/$name.pid"
RC
    chmod 0755 "/etc/init.d/$name"
    rc-update add "$name" default >/dev/null
    rc-service "$name" start >/dev/null
  fi
}

add_daemon metrics-relay {{ decoy }}
add_daemon {{ service }} {{ port }}
add_daemon cache-warmer {{ decoy2 }}
for port in {{ port }} {{ decoy }} {{ decoy2 }}; do
  for _ in $(seq 1 75); do
    ss -Hltn "sport = :$port" | grep -q . && break
    sleep 0.2
  done
  ss -Hltn "sport = :$port" | grep -q . || { echo "nothing listens on $port" >&2; exit 1; }
done

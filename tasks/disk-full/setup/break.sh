#!/bin/bash
# Break: give app-writer a small (16 MiB) tmpfs at /var/lib/appdata, put the precious
# records.db (deterministic content: `seq 1 20000`) into data/, then fill every remaining
# page with "render cache" junk under cache/. The writer creates heartbeat.tmp and renames
# it over heartbeat, so on a full filesystem every write fails (ENOSPC), the service exits
# with an error, is restarted a few times and then hits its start limit -> failed.
set -eu

systemctl stop app-writer.service >/dev/null 2>&1 || true

if mountpoint -q /var/lib/appdata; then
  umount /var/lib/appdata
fi
mkdir -p /var/lib/appdata
mount -t tmpfs -o size=16m,mode=0755 appdata /var/lib/appdata
mkdir -p /var/lib/appdata/data /var/lib/appdata/cache

seq 1 20000 > /var/lib/appdata/data/records.db
cat > /var/lib/appdata/cache/README <<'TXT'
Render cache of app-writer exports. Regenerated on demand; safe to purge at any time.
TXT

cat > /usr/local/bin/app-writer <<'SCRIPT'
#!/bin/bash
# app-writer: refresh /var/lib/appdata/data/heartbeat every 2 s; exit on write failure.
set -u
dir=/var/lib/appdata/data
while true; do
  if ! { date +%s > "$dir/heartbeat.tmp" && mv -f "$dir/heartbeat.tmp" "$dir/heartbeat"; } 2>/dev/null; then
    rm -f "$dir/heartbeat.tmp"
    echo "app-writer: cannot write heartbeat in $dir: $(df -h --output=avail "$dir" | tail -n1 | tr -d ' ') available" >&2
    exit 1
  fi
  sleep 2
done
SCRIPT
chmod 0755 /usr/local/bin/app-writer

cat > /etc/systemd/system/app-writer.service <<'UNIT'
[Unit]
Description=Application data writer (heartbeat)
After=local-fs.target
StartLimitIntervalSec=120
StartLimitBurst=3

[Service]
ExecStart=/usr/local/bin/app-writer
Restart=on-failure
RestartSec=3

[Install]
WantedBy=multi-user.target
UNIT

# Fill the filesystem: 1 MiB junk files until ENOSPC, then top up the last pages.
i=0
while dd if=/dev/zero of=/var/lib/appdata/cache/render-$(printf %04d "$i").tmp bs=1M count=1 status=none 2>/dev/null; do
  i=$((i + 1))
  [ "$i" -lt 64 ] || { echo "filesystem never filled" >&2; exit 1; }
done
j=0
while dd if=/dev/zero of=/var/lib/appdata/cache/render-tail-$j.tmp bs=4k count=1 status=none 2>/dev/null; do
  j=$((j + 1))
  [ "$j" -lt 512 ] || break
done
# No file may be created any more (tmpfs allocates whole pages).
if ( echo x > /var/lib/appdata/data/.probe ) 2>/dev/null; then
  rm -f /var/lib/appdata/data/.probe
  echo "filesystem is not full" >&2
  exit 1
fi
rm -f /var/lib/appdata/data/.probe

systemctl daemon-reload
systemctl reset-failed app-writer.service >/dev/null 2>&1 || true
systemctl enable app-writer.service >/dev/null 2>&1
systemctl start app-writer.service || true

# Wait (bounded) until systemd has given up on it, so the broken state is stable.
for _ in $(seq 1 60); do
  systemctl is-failed --quiet app-writer.service && break
  sleep 0.5
done
exit 0

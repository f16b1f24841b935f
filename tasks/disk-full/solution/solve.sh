#!/bin/bash
# Oracle: purge the disposable render cache (never data/), then restart app-writer, which
# has given up after hitting its start limit.
set -eu
find /var/lib/appdata/cache -type f -name '*.tmp' -delete
systemctl reset-failed app-writer.service || true
systemctl restart app-writer.service

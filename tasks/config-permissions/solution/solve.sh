#!/bin/bash
# Oracle: let the reportapi group traverse the directory and read (not write) the file;
# others get nothing. Then restart the service, which gave up after its start limit.
set -eu
chown root:reportapi /etc/report-api /etc/report-api/config.ini
chmod 0750 /etc/report-api
chmod 0640 /etc/report-api/config.ini
systemctl reset-failed report-api.service || true
systemctl restart report-api.service

#!/bin/bash
# Starting condition on `proxy`: nginx running with Debian's default site (the welcome
# page), i.e. not yet proxying anything.
set -eu
if [ ! -e /etc/nginx/sites-enabled/default ] && [ -e /etc/nginx/sites-available/default ]; then
  ln -s /etc/nginx/sites-available/default /etc/nginx/sites-enabled/default
fi
systemctl enable nginx.service >/dev/null 2>&1
systemctl is-active --quiet nginx.service || systemctl restart nginx.service
systemctl is-active --quiet nginx.service

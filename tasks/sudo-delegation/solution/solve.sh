#!/bin/bash
# Oracle: replace the legacy rule by one that allows exactly the wrapper, as root, for the
# group; check the syntax before it takes effect.
set -eu
tmp=$(mktemp /etc/sudoers.d/.new-XXXXXX)
printf '%s\n' '# members of {{ team }} may reload the web application, nothing else' \
  '%{{ team }} ALL=(root) NOPASSWD: /usr/local/sbin/webapp-reload' > "$tmp"
chmod 0440 "$tmp"
visudo -c -f "$tmp"
mv -f "$tmp" /etc/sudoers.d/legacy-{{ team }}
visudo -c

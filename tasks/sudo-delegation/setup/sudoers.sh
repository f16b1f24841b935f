#!/bin/bash
# Starting condition: users {{ dev }} and qa in group {{ team }}, guest outside it, the
# wrapper /usr/local/sbin/webapp-reload, and a legacy sudoers rule giving {{ team }} ALL.
set -eu
getent group {{ team }} >/dev/null || groupadd {{ team }}
for u in {{ dev }} qa guest; do
  id -u "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
usermod -aG {{ team }} {{ dev }}
usermod -aG {{ team }} qa

cat > /usr/local/sbin/webapp-reload <<'SH'
#!/bin/sh
# Reload the web application (nginx) after a deploy; prints who ran it.
nginx -t >/dev/null 2>&1 || { echo "nginx configuration is broken: not reloading" >&2; exit 1; }
nginx -s reload 2>/dev/null || true
echo "webapp reloaded by $(id -un)"
SH
chmod 0755 /usr/local/sbin/webapp-reload

cat > /etc/sudoers.d/legacy-{{ team }} <<'SUDO'
# legacy rule from the old deployment tooling
%{{ team }} ALL=(ALL:ALL) NOPASSWD: ALL
SUDO
chmod 0440 /etc/sudoers.d/legacy-{{ team }}
visudo -c >/dev/null
runuser -u {{ dev }} -- sudo -n /usr/bin/id -u | grep -qx 0

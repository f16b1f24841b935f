#!/bin/bash
# Oracle, internal (before the firewall): root accepts client's key (the throw-away test key
# of this oracle; root's own authorized_keys also holds the harness's key, which stays).
set -eu
key='ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICzySUig9yhz54VXdIL6jkdXx7aA6PiW8ja49nwOUMgA oracle-bastion@client (test key)'
install -d -m 0700 /root/.ssh
touch /root/.ssh/authorized_keys
grep -qxF "$key" /root/.ssh/authorized_keys || printf '%s\n' "$key" >> /root/.ssh/authorized_keys
chmod 0600 /root/.ssh/authorized_keys

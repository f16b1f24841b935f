#!/bin/bash
# Oracle, bastion: the jump account accepts client's key for forwarding only (restrict, then
# port-forwarding back on: ProxyJump is a direct-tcpip channel, it needs no shell or pty).
# The key is a throw-away test key of this oracle (solution/client.sh has its private half).
set -eu
install -d -o {{ jump }} -g {{ jump }} -m 0700 /home/{{ jump }}/.ssh
printf '%s\n' 'restrict,port-forwarding ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICzySUig9yhz54VXdIL6jkdXx7aA6PiW8ja49nwOUMgA oracle-bastion@client (test key)' > /home/{{ jump }}/.ssh/authorized_keys
chown {{ jump }}:{{ jump }} /home/{{ jump }}/.ssh/authorized_keys
chmod 0600 /home/{{ jump }}/.ssh/authorized_keys

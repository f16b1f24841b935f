#!/bin/bash
# Oracle, client: root's key for the hop (a throw-away test key, written as is: an oracle
# cannot carry a freshly generated public key to the other hosts), ~/.ssh/config with
# ProxyJump through the jump account, and both host keys in known_hosts (scanned while
# internal still accepts client directly), then the real thing.
set -eu
install -d -m 0700 /root/.ssh
umask 077
cat > /root/.ssh/id_jump <<'KEY'
-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACAs8klIoPcoc+eFV3SC+o5HV8e2gOj4lvI2uPZ8DlDIAAAAAKgmS9UUJkvV
FAAAAAtzc2gtZWQyNTUxOQAAACAs8klIoPcoc+eFV3SC+o5HV8e2gOj4lvI2uPZ8DlDIAA
AAAEDXNkXdE6o2zFnWOogv5sZ1yJv7azLTG2mR39TIxbb98SzySUig9yhz54VXdIL6jkdX
x7aA6PiW8ja49nwOUMgAAAAAIG9yYWNsZS1iYXN0aW9uQGNsaWVudCAodGVzdCBrZXkpAQ
IDBAU=
-----END OPENSSH PRIVATE KEY-----
KEY
printf '%s\n' 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICzySUig9yhz54VXdIL6jkdXx7aA6PiW8ja49nwOUMgA oracle-bastion@client (test key)' > /root/.ssh/id_jump.pub
cat > /root/.ssh/config <<'CONF'
Host bastion
    User {{ jump }}

Host internal
    User root
    ProxyJump bastion

Host bastion internal
    IdentityFile ~/.ssh/id_jump
    IdentitiesOnly yes
    BatchMode yes
CONF
for _ in 1 2 3 4 5; do
  ssh-keyscan -T 15 -t ed25519 bastion internal 2>/dev/null > /root/.ssh/known_hosts.new || true
  [ "$(grep -c ' ssh-ed25519 ' /root/.ssh/known_hosts.new)" -ge 2 ] && break
  sleep 3
done
[ "$(grep -c ' ssh-ed25519 ' /root/.ssh/known_hosts.new)" -ge 2 ]
touch /root/.ssh/known_hosts
cat /root/.ssh/known_hosts.new >> /root/.ssh/known_hosts
rm -f /root/.ssh/known_hosts.new
chmod 0600 /root/.ssh/config /root/.ssh/known_hosts
ssh -o BatchMode=yes internal hostname

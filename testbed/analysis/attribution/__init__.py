"""Which recorded command most likely caused a change seen between two snapshots.

Every command line is analysed once by `testbed.analysis.command.effects_of`; its effects
become a `Footprint` (`footprint`): the paths it writes, the units, packages, users,
sysctl keys and mount points it acts on, the servers it starts. A change is described by a
`Target` (a path, unit, package, user, group, port, process, sysctl key, firewall rule,
network item, mount, hostname, repository or package-manager state) and
`attribute(target, commands)` picks the command.

Confidence levels (a higher level always wins over a lower one):

- ``high``: the command touches the item itself — an absolute path it writes, creates,
  moves, copies, deletes or chmods (redirections `>`/`>>`/`&>`, `tee`, `cp`, `mv`,
  `install`, `ln`, `rsync`, `touch`, `mkdir`, `truncate`, `rm`, `chmod`/`chown`, `sed -i`,
  `perl -i`, `dd of=`, `ssh-keygen -f`, `openssl … -out/-keyout`, `wget -O/-P`, `curl
  -o/--output-dir`, `tar -x -C`, `unzip -d`, `git clone DIR`, `htpasswd`, editors), or a
  path inside a tree it writes (`cp -r`, `tar -x -C`, `unzip -d`, `git clone`, `wget -P`,
  `chmod -R`); a unit named by `systemctl`/`service`/`rc-service`/`rc-update`/
  `update-rc.d`/`chkconfig`; a package named by an install/remove command; a user or group
  named by `useradd`/`usermod`/`passwd`/`groupadd`/`gpasswd`/`adduser`/…; a sysctl key set
  by `sysctl -w k=v` or written under /proc/sys; a firewall rule sharing a port, address or
  chain name with a rule-changing `nft`/`iptables`/`ufw`/`firewall-cmd` command; an address
  or route sharing an address/interface with an `ip addr|route|link` change; a mount point
  named by `mount`/`umount`/`swapon`; a server started with the listening port on its
  command line (`python3 -m http.server 8000`, `nc -l 9000`, `socat TCP-LISTEN:…`); a
  process whose command line equals the started command; `hostnamectl set-hostname`.
- ``medium``: the command very likely caused it but the match is indirect — a relative path
  or a default output name matched by suffix (`wget URL` in an unknown directory, `~/x`,
  `ssh-keygen` without `-f` → `*/.ssh/id_<type>`); any package-changing command for a
  package it did not name (dependencies); a rule-changing firewall command sharing no
  token; `sysctl -p`/`--system`, or a write to a sysctl file that mentions the key; a
  start/restart of a unit whose name matches the program owning a socket or process; the
  same program started with other arguments; a port number on the command line of a
  command that is not a client (`curl`, `ss`, …); `mount -a`; `crontab`; a write to the
  unit's own unit file; `chpasswd`/`newusers` input naming the user.
- ``low``: the item is only mentioned — the path's base name or parent directory appears
  as a word, the unit/package/user/program name or the port appears in the text.
- ``none``: nothing matched; the change is unattributed.

Among the matching commands of the best level, `attribute` picks the LAST one by `seq`,
preferring commands that did not fail (exit status 0 or unknown) over failed ones. Only
commands on the target's node are considered, plus (rule: cross-node) commands on other
nodes whose matching part ran through `ssh HOST '…'` (their method says "via ssh").

Contract: nothing here raises on odd command text (the shell parser is total).

Modules: `model` (commands, targets, attributions), `footprint` (what a command line
touches, from its effects), `match` (confidence of one footprint for one target, and
`attribute`).
"""

from __future__ import annotations

from testbed.analysis.attribution.footprint import CommandEffects, Footprint, command_effects, footprint
from testbed.analysis.attribution.match import attribute, match
from testbed.analysis.attribution.model import (
    RANK,
    TEXT_LIMIT,
    UNATTRIBUTED,
    Attribution,
    CommandView,
    Confidence,
    Target,
)
from testbed.analysis.command.effects import Write
from testbed.analysis.command.paths import brace_expand

__all__ = [
    "RANK",
    "TEXT_LIMIT",
    "UNATTRIBUTED",
    "Attribution",
    "CommandEffects",
    "CommandView",
    "Confidence",
    "Footprint",
    "Target",
    "Write",
    "attribute",
    "brace_expand",
    "command_effects",
    "footprint",
    "match",
]

"""Names of service units, one home for every spelling rule.

`unit_name("nginx")` is the unit file name (`nginx.service`; names with a unit suffix are
kept), `unit_stem("getty@tty1.service")` the program-like stem (`getty`), and
`service_name("/usr/lib/systemd/system/nginx.service")` the service a word names for the
impact classes (`nginx`: directory and a `.service/.socket/.target/.timer` suffix dropped).
"""

from __future__ import annotations

import re

from testbed.analysis.command.parsed import command_name

_UNIT_SUFFIX = re.compile(r"\.(service|socket|timer|target|mount|automount|path|slice|scope|swap|device)$")


def unit_name(name: str) -> str:
    """`nginx` → `nginx.service`; names with a unit suffix are kept (surrounding blanks dropped)."""
    name = name.strip()
    return name if _UNIT_SUFFIX.search(name) else name + ".service"


def unit_stem(unit: str) -> str:
    """`nginx.service` → `nginx`; `getty@tty1.service` → `getty`."""
    return unit.rsplit(".", 1)[0].split("@", 1)[0]


def service_name(word: str) -> str:
    """The service a unit word names: `nginx.service` → `nginx`, `/x/y.socket` → `y`."""
    return re.sub(r"\.(service|socket|target|timer)$", "", command_name(word))

"""Which addresses count as loopback for the servers' bind checks (`testbed dashboard`,
`testbed serve`): `localhost` and loopback IP addresses (127.0.0.0/8, ::1, bracketed or
not, surrounding blanks ignored); every other name or address, `0.0.0.0` and `::`
included, is not."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP addresses; False for every other host."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False

"""The commands that point a guest at its lab's egress proxy.

Contracts:
- `guest_proxy_commands(proxy_url, dialect, no_proxy)` returns shell commands, each to be
  run (and recorded) as a harness command on the guest; together they configure the
  package manager of the dialect (apt: `/etc/apt/apt.conf.d/80testbed-proxy`; dnf/yum:
  `proxy=` in their main configuration; apk reads the environment), pip
  (`/etc/pip.conf`), and `http_proxy`/`https_proxy`/`no_proxy` (and the upper-case forms)
  in `/etc/environment` and `/etc/profile.d/testbed-proxy.sh`. Running them twice leaves
  the same files. `no_proxy` keeps lab-internal names and subnets off the proxy.
- `PROXY_FILES` lists every path they write: the changes the harness made, never residue.
- `no_proxy_for(names, subnets)`: loopback, the lab's node names and its subnets.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence

APT_FILE = "/etc/apt/apt.conf.d/80testbed-proxy"
PIP_FILE = "/etc/pip.conf"
PROFILE_FILE = "/etc/profile.d/testbed-proxy.sh"
ENVIRONMENT_FILE = "/etc/environment"
RPM_FILES = ("/etc/dnf/dnf.conf", "/etc/yum.conf")
PROXY_FILES: tuple[str, ...] = (APT_FILE, PIP_FILE, PROFILE_FILE, ENVIRONMENT_FILE, *RPM_FILES)

_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")


def no_proxy_for(names: Iterable[str], subnets: Iterable[str]) -> list[str]:
    """What `no_proxy` should list for a lab: loopback, its node names, its subnets."""
    return list(dict.fromkeys(["localhost", "127.0.0.1", "::1", *names, *subnets]))


def _environment(proxy_url: str, no_proxy: str) -> list[tuple[str, str]]:
    return [(v, proxy_url) for v in _VARIABLES] + [("no_proxy", no_proxy), ("NO_PROXY", no_proxy)]


def _write(path: str, text: str) -> str:
    return f"printf '%s' {shlex.quote(text)} > {path}"


def _environment_commands(proxy_url: str, no_proxy: str) -> list[str]:
    pairs = _environment(proxy_url, no_proxy)
    names = "|".join(name for name, _ in pairs)
    lines = "".join(f"{name}={value}\n" for name, value in pairs)
    exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in pairs)
    return [
        f"touch {ENVIRONMENT_FILE} && sed -i -E '/^({names})=/d' {ENVIRONMENT_FILE} && "
        f"printf '%s' {shlex.quote(lines)} >> {ENVIRONMENT_FILE}",
        _write(PROFILE_FILE, exports),
    ]


def _package_manager_commands(proxy_url: str, dialect: str) -> list[str]:
    if dialect in ("debian", "frr"):  # frr: the router image built on Debian
        apt = f'Acquire::http::Proxy "{proxy_url}";\nAcquire::https::Proxy "{proxy_url}";\n'
        return [_write(APT_FILE, apt)]
    if dialect == "rhel":
        return [
            f'for f in {" ".join(RPM_FILES)}; do [ -f "$f" ] || continue; sed -i \'/^proxy=/d\' "$f"; '
            f"printf 'proxy=%s\\n' {shlex.quote(proxy_url)} >> \"$f\"; done"
        ]
    return []  # apk (alpine) and others read http_proxy from the environment


def guest_proxy_commands(proxy_url: str, dialect: str, no_proxy: Sequence[str] = ()) -> list[str]:
    """See the module contract."""
    excluded = ",".join(no_proxy or no_proxy_for((), ()))
    pip = f"[global]\nproxy = {proxy_url}\n"
    return [
        *_package_manager_commands(proxy_url, dialect),
        _write(PIP_FILE, pip),
        *_environment_commands(proxy_url, excluded),
    ]

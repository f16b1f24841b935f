"""Which hosts a lab may reach through the proxy, as Squid `dstdomain` values.

Contracts:
- `MIRROR_HOSTS` are the package mirrors of every distribution the image catalog knows
  (Debian, Ubuntu, the EL family, Alpine) and PyPI; `mirror_hosts(catalog)` adds the host
  of every debootstrap recipe's `mirror` URL in `images/*.yaml`.
- `allowed_domains(spec, mirrors)`: nothing for mode `none`; the mirrors for `mirror`; the
  mirrors plus the spec's patterns for `allow`. Patterns become Squid values: `*.d` is
  `.d` (the domain and every name under it), a host stays itself. The result is sorted,
  and a name already covered by a `.domain` entry is left out (Squid refuses a list
  holding both).
- Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from testbed.model.egress import EgressMode, EgressSpec
from testbed.model.images import DebootstrapSource, ImageDef

MIRROR_HOSTS: tuple[str, ...] = (
    # Debian
    "deb.debian.org",
    "security.debian.org",
    "ftp.debian.org",
    "archive.debian.org",
    # Ubuntu
    "archive.ubuntu.com",
    "security.ubuntu.com",
    "ports.ubuntu.com",
    # EL family (AlmaLinux, CentOS Stream) and EPEL
    "repo.almalinux.org",
    "mirrors.almalinux.org",
    "mirror.stream.centos.org",
    "mirrors.centos.org",
    "dl.fedoraproject.org",
    # Alpine
    "dl-cdn.alpinelinux.org",
    # PyPI
    "pypi.org",
    "files.pythonhosted.org",
)
"""Package mirrors reachable in mode `mirror` (and `allow`)."""


def mirror_hosts(catalog: Mapping[str, ImageDef] | None = None) -> tuple[str, ...]:
    """`MIRROR_HOSTS` plus the mirror host of every debootstrap recipe in `catalog`."""
    hosts = list(MIRROR_HOSTS)
    for image in (catalog or {}).values():
        if isinstance(image.source, DebootstrapSource):
            host = urlsplit(image.source.mirror).hostname
            if host:
                hosts.append(host.lower())
    return tuple(dict.fromkeys(hosts))


def squid_domain(pattern: str) -> str:
    """A validated host pattern (`testbed.model.egress`) as a Squid dstdomain value."""
    return "." + pattern[2:] if pattern.startswith("*.") else pattern


def _covered(name: str, wildcards: set[str]) -> bool:
    """Whether `name` falls under one of `wildcards` (values `.domain`) other than itself."""
    labels = name.lstrip(".").split(".")
    first = 1 if name.startswith(".") else 0
    return any("." + ".".join(labels[i:]) in wildcards for i in range(first, len(labels)))


def dedupe_domains(values: Iterable[str]) -> tuple[str, ...]:
    """Squid dstdomain values, sorted, without names a `.domain` entry already covers."""
    unique = set(values)
    wildcards = {v for v in unique if v.startswith(".")}
    return tuple(sorted(v for v in unique if not _covered(v, wildcards)))


def allowed_domains(spec: EgressSpec, mirrors: Iterable[str] = MIRROR_HOSTS) -> tuple[str, ...]:
    """The Squid dstdomain values a lab with policy `spec` may reach (empty for `none`)."""
    if spec.mode == EgressMode.NONE:
        return ()
    values = list(mirrors)
    if spec.mode == EgressMode.ALLOW:
        values += [squid_domain(p) for p in spec.allow]
    return dedupe_domains(values)

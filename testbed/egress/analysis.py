"""Two analyses of a run's egress rows: the package repositories it used, and its downloads.

Contracts:
- Rows are anything with the `egress` table's fields (`EgressRow`: a stored
  `testbed.db.models.Egress` or a `testbed.db.records.EgressRecord`).
- `repositories(rows, mirrors)` groups the requests that look like package-repository
  traffic by repository base URL: apt (`…/dists/…`, `…/pool/…`), rpm (`…/repodata/…`,
  mirror lists and metalinks), apk (`…/APKINDEX.tar.gz`), PyPI-style indexes (`…/simple/…`),
  and, since HTTPS hides the path, every CONNECT (`https://host/`, kind `tls`). A repository
  whose host is not one of `mirrors` was `added` (by the task or the agent); its `status` is
  `resolved` when some request reached the server, else `dns_failure` when its host never
  resolved, else `denied`. Sorted by first request.
- `downloads(rows)` is the provenance list: every request, in time order, with URL, status,
  bytes, decision and node; `Download.package` marks package files (.deb, .rpm, .apk,
  .whl, source archives).
- Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from testbed.egress.hosts import MIRROR_HOSTS
from testbed.model.vocab import EgressDecision

_REPO_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("apt", re.compile(r"^(?P<base>.+?)/(dists|pool)/")),
    ("rpm", re.compile(r"^(?P<base>.+?)/repodata/")),
    ("rpm", re.compile(r"^(?P<base>[^?]+?/(mirrorlist|metalink))(\?|$)")),
    ("apk", re.compile(r"^(?P<base>.+?)/[^/]+/APKINDEX\.tar\.gz$")),
    ("pypi", re.compile(r"^(?P<base>.+?)/simple/")),
)
_PACKAGE_RE = re.compile(r"\.(deb|udeb|rpm|apk|whl|tar\.gz|tar\.xz|tar\.bz2|tgz|zip)$", re.IGNORECASE)


class EgressRow(Protocol):
    @property
    def node(self) -> str | None: ...
    @property
    def at(self) -> datetime: ...
    @property
    def method(self) -> str: ...
    @property
    def host(self) -> str | None: ...
    @property
    def url(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    @property
    def decision(self) -> str: ...


@dataclass(frozen=True)
class Repository:
    """One package repository seen in a run's egress."""

    base: str
    host: str
    kind: str
    added: bool
    requests: int
    allowed: int
    dns_failures: int
    denied: int
    nodes: tuple[str, ...]
    first_at: datetime

    @property
    def status(self) -> str:
        if self.allowed:
            return "resolved"
        if self.dns_failures:
            return EgressDecision.DNS_FAILURE.value
        return EgressDecision.DENIED.value


@dataclass(frozen=True)
class Download:
    """One request, as provenance."""

    at: datetime
    node: str | None
    method: str
    url: str
    status: int
    bytes: int
    decision: str

    @property
    def package(self) -> bool:
        return self.method != "CONNECT" and bool(_PACKAGE_RE.search(self.url.split("?", 1)[0]))


def repository_of(row: EgressRow) -> tuple[str, str] | None:
    """(kind, base URL) of the repository `row` belongs to, or None."""
    if row.method == "CONNECT":
        host = row.host or row.url.rsplit(":", 1)[0]
        return "tls", f"https://{host}/"
    for kind, pattern in _REPO_MARKERS:
        match = pattern.match(row.url)
        if match:
            return kind, match.group("base")
    return None


def _host_of(row: EgressRow, base: str) -> str:
    if row.host:
        return row.host.lower()
    return base.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0].lower()


def repositories(rows: Iterable[EgressRow], mirrors: Iterable[str] = MIRROR_HOSTS) -> list[Repository]:
    """See the module contract."""
    known = {m.lower() for m in mirrors}
    groups: dict[tuple[str, str], list[EgressRow]] = {}
    for row in rows:
        found = repository_of(row)
        if found is not None:
            groups.setdefault(found, []).append(row)
    found_repos = []
    for (kind, base), members in groups.items():
        host = _host_of(members[0], base)
        decisions = [m.decision for m in members]
        found_repos.append(
            Repository(
                base=base,
                host=host,
                kind=kind,
                added=host not in known,
                requests=len(members),
                allowed=decisions.count(EgressDecision.ALLOWED),
                dns_failures=decisions.count(EgressDecision.DNS_FAILURE),
                denied=decisions.count(EgressDecision.DENIED),
                nodes=tuple(sorted({m.node for m in members if m.node})),
                first_at=min(m.at for m in members),
            )
        )
    return sorted(found_repos, key=lambda r: (r.first_at, r.base))


def downloads(rows: Iterable[EgressRow]) -> list[Download]:
    """See the module contract."""
    return sorted(
        (Download(r.at, r.node, r.method, r.url, r.status, r.bytes, r.decision) for r in rows),
        key=lambda d: d.at,
    )

"""Squid's access log (format `testbed.egress.squidconf.LOG_FORMAT`) as egress rows.

Contracts:
- `parse_line` turns one line into a `LogEntry`, or None for a line that is not a request:
  blank, malformed, or a client that connected and sent nothing
  (`error:transaction-end-before-headers`).
- Decision: Squid's `ERR_DNS_FAIL` (also as `503:ERR_DNS_FAIL`) is `dns_failure`; `TCP_DENIED`, any other Squid error
  answered before contacting a server (`ERR_ACCESS_DENIED`, `ERR_INVALID_REQ`, ...), or a
  request Squid could not parse, is `denied`; anything else (the server's answer, whatever
  its status) is `allowed`.
- `to_records(entries, nodes_by_ip)` attributes each entry to the node whose management
  address made it (None when no node has it); `read_records(path, nodes_by_ip)` does both
  for a whole file (a missing file is no request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from testbed.db.records import EgressRecord
from testbed.egress.squidconf import LOG_FIELDS
from testbed.model.vocab import EgressDecision

NOT_A_REQUEST = "error:transaction-end-before-headers"
# Squid errors that mean the request was refused or never understood (no server contacted).
_REFUSALS = frozenset({"ERR_ACCESS_DENIED", "ERR_INVALID_REQ", "ERR_INVALID_URL", "ERR_UNSUP_REQ", "ERR_TOO_BIG"})


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One request as Squid logged it."""

    at: datetime
    client: str
    method: str
    host: str | None
    url: str
    status: int
    bytes: int
    squid_status: str
    error: str | None

    @property
    def decision(self) -> EgressDecision:
        if self.error == "ERR_DNS_FAIL":
            return EgressDecision.DNS_FAILURE
        if "DENIED" in self.squid_status or self.error in _REFUSALS or self.url.startswith("error:"):
            return EgressDecision.DENIED
        return EgressDecision.ALLOWED


def _dash(value: str) -> str | None:
    return None if value == "-" else value


def _error_code(value: str) -> str | None:
    """Squid's error name without the status a `deny_info` may put before it."""
    code = _dash(value)
    return code.rpartition(":")[2] if code else None


def parse_line(line: str) -> LogEntry | None:
    """See the module contract."""
    parts = line.split()
    if len(parts) != len(LOG_FIELDS):
        return None
    raw = dict(zip(LOG_FIELDS, parts, strict=True))
    if raw["url"] == NOT_A_REQUEST:
        return None
    try:
        at = datetime.fromtimestamp(float(raw["at"]), UTC)
        status = int(raw["status"]) if raw["status"] != "-" else 0
        size = int(raw["bytes"]) if raw["bytes"] != "-" else 0
    except ValueError:
        return None
    return LogEntry(
        at=at,
        client=raw["client"],
        method=raw["method"],
        host=_dash(raw["host"]),
        url=raw["url"],
        status=status,
        bytes=size,
        squid_status=raw["squid_status"],
        error=_error_code(raw["error"]),
    )


def parse_log(lines: Iterable[str]) -> list[LogEntry]:
    """Every request in `lines`, in order."""
    return [entry for line in lines if (entry := parse_line(line)) is not None]


def to_records(entries: Iterable[LogEntry], nodes_by_ip: Mapping[str, str]) -> list[EgressRecord]:
    """`entries` as rows of the `egress` table, attributed to nodes by client address."""
    return [
        EgressRecord(
            node=nodes_by_ip.get(e.client),
            at=e.at,
            method=e.method,
            host=e.host,
            url=e.url,
            status=e.status,
            bytes=e.bytes,
            decision=e.decision,
        )
        for e in entries
    ]


def read_records(path: Path, nodes_by_ip: Mapping[str, str]) -> list[EgressRecord]:
    """The rows of the access log at `path` (none when it does not exist)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return to_records(parse_log(text.splitlines()), nodes_by_ip)

"""The egress section of `testbed runs show`: a count and the first requests.

Contracts:
- `egress_table(rows, limit)` is None when the run made no request through the proxy;
  else a rich `Table` titled with the counts (requests, denied, DNS failures) listing the
  first `limit` requests in time order, denied ones and DNS failures marked (a leading
  `✗` and red / yellow), and a last row saying how many more there are.
- `egress_json(rows)` is the section for `--json`: `{"count", "denied", "dns_failures",
  "requests": [...]}` with every request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from testbed.egress.analysis import EgressRow
from testbed.model.vocab import EgressDecision

_STYLE = {EgressDecision.DENIED: "red", EgressDecision.DNS_FAILURE: "yellow"}


def _counts(rows: Sequence[EgressRow]) -> tuple[int, int]:
    decisions = [r.decision for r in rows]
    return decisions.count(EgressDecision.DENIED), decisions.count(EgressDecision.DNS_FAILURE)


def egress_table(rows: Sequence[EgressRow], limit: int = 20) -> Table | None:
    """See the module contract."""
    if not rows:
        return None
    denied, dns = _counts(rows)
    table = Table(
        title=f"egress ({len(rows)} requests, {denied} denied, {dns} DNS failures)",
        title_justify="left",
    )
    for column in ("at", "node", "method", "status", "bytes", "decision", "url"):
        table.add_column(column, justify="right" if column in ("status", "bytes") else "left")
    for row in rows[:limit]:
        style = _STYLE.get(EgressDecision(row.decision), "")
        mark = "✗ " if style else ""
        table.add_row(
            row.at.strftime("%H:%M:%S"),
            row.node or "-",
            row.method,
            str(row.status),
            str(row.bytes),
            Text(mark + row.decision, style=style),
            Text(row.url, style=style),
        )
    if len(rows) > limit:
        table.add_row("", "", "", "", "", "", Text(f"… {len(rows) - limit} more", style="dim"))
    return table


def egress_json(rows: Sequence[EgressRow]) -> dict[str, Any]:
    """See the module contract."""
    denied, dns = _counts(rows)
    return {
        "count": len(rows),
        "denied": denied,
        "dns_failures": dns,
        "requests": [
            {
                "at": r.at.isoformat(),
                "node": r.node,
                "method": r.method,
                "host": r.host,
                "url": r.url,
                "status": r.status,
                "bytes": r.bytes,
                "decision": r.decision,
            }
            for r in rows
        ],
    }

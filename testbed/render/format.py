"""Numbers, durations, sizes and times as text for people.

Contracts (every function is pure; `None` gives the `missing` text):

- `duration(s)`: compact — `850ms`, `4.2s`, `3m05s`, `1h02m` (tables, the live view).
- `duration_in_units(s, seconds_digits=1)`: with a unit word — `12.3 s`, `4.5 min`,
  `1.2 h` (the report's tables; its chart axes use `seconds_digits=0`).
- `axis_duration(s)`: terse tick labels — `30s`, `2m`, `2.5m`, `1.5h` (timelines).
- `size(n)`: bytes in binary units — `512 B`, `4.0 KiB`, `1.2 MiB`, `3.0 GiB`.
- `percent(fraction, digits=0)`: `0.625` → `62%` (`digits=1`: `62.5%`).
- `timestamp(t, seconds=True)`: `YYYY-MM-DD HH:MM[:SS]` in UTC; ISO 8601 strings are
  accepted; a naive datetime is taken as UTC.
- `first_line(text, limit)`: the first non-blank-stripped line, cut to `limit` characters,
  with ` …` when anything (more characters or more lines) was left out.
- `usd(amount)`: `$0.0029` under a cent (4 decimals), else `$1.25`.
- `count(n)`: thousands separated — `12,345`.
"""

from __future__ import annotations

from datetime import UTC, datetime

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB")


def duration(seconds: float | None, missing: str = "-") -> str:
    """A compact duration (see the module contract)."""
    if seconds is None:
        return missing
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        minutes, secs = divmod(round(seconds), 60)
        return f"{minutes}m{secs:02d}s"
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m"


def duration_in_units(seconds: float | None, seconds_digits: int = 1, missing: str = "-") -> str:
    """A duration with a unit word (see the module contract)."""
    if seconds is None:
        return missing
    if seconds < 60:
        return f"{seconds:.{seconds_digits}f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def axis_duration(seconds: float) -> str:
    """A terse tick label (see the module contract)."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m" if seconds % 60 == 0 else f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def size(n: int) -> str:
    """A byte count in binary units (see the module contract)."""
    value = float(n)
    for unit in _BINARY_UNITS:
        if value < 1024 or unit == _BINARY_UNITS[-1]:
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def percent(fraction: float | None, digits: int = 0, missing: str = "\u2013") -> str:
    """A fraction in [0, 1] as a percentage (see the module contract)."""
    return missing if fraction is None else f"{fraction * 100:.{digits}f}%"


def timestamp(value: datetime | str | None, *, seconds: bool = True, missing: str = "-") -> str:
    """A point in time in UTC (see the module contract)."""
    if value is None:
        return missing
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def first_line(text: str | None, limit: int = 80, missing: str = "-") -> str:
    """The first line of `text`, cut (see the module contract)."""
    stripped = (text or "").strip()
    if not stripped:
        return missing
    lines = stripped.splitlines()
    line = lines[0]
    more = len(lines) > 1 or len(line) > limit
    return line[:limit] + " …" if more else line


def usd(amount: float | None, missing: str = "-") -> str:
    """An amount of US dollars (see the module contract)."""
    if amount is None:
        return missing
    return f"${amount:.4f}" if abs(amount) < 0.01 else f"${amount:,.2f}"


def count(n: int | float | None, missing: str = "-") -> str:
    """A count with thousands separators (see the module contract)."""
    return missing if n is None else f"{n:,.0f}"

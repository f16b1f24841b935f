"""`testbed.render.format`: the one formatter of each kind (durations, sizes, percentages,
timestamps, first lines), at their boundaries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from testbed.render.format import (
    axis_duration,
    duration,
    duration_in_units,
    first_line,
    percent,
    size,
    timestamp,
)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0, "0ms"), (0.85, "850ms"), (1, "1.0s"), (4.24, "4.2s"), (59.9, "59.9s"), (60, "1m00s"),
     (185, "3m05s"), (3599, "59m59s"), (3600, "1h00m"), (3725, "1h02m"), (7200, "2h00m")],
)  # fmt: skip
def test_duration(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


def test_duration_missing_text() -> None:
    assert duration(None, missing="?") == "?"


@pytest.mark.parametrize(
    ("seconds", "digits", "text"),
    [(None, 1, "-"), (12.34, 1, "12.3 s"), (12.34, 0, "12 s"), (270, 1, "4.5 min"), (4320, 0, "1.2 h")],
)
def test_duration_in_units(seconds: float | None, digits: int, text: str) -> None:
    assert duration_in_units(seconds, seconds_digits=digits) == text


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (30, "30s"), (120, "2m"), (150, "2.5m"), (5400, "1.5h")])
def test_axis_duration(seconds: float, text: str) -> None:
    assert axis_duration(seconds) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (512, "512 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (4096, "4.0 KiB"), (1536 * 1024, "1.5 MiB"),
     (3 * 1024**3, "3.0 GiB"), (5 * 1024**4, "5120.0 GiB")],
)  # fmt: skip
def test_size(n: int, text: str) -> None:
    assert size(n) == text


def test_percent() -> None:
    assert percent(0.73) == "73%" and percent(0.625, digits=1) == "62.5%"
    assert percent(None) == "\u2013" and percent(None, missing="-") == "-" and percent(1.0) == "100%"


def test_timestamp_is_utc() -> None:
    t = datetime(2026, 3, 2, 11, 5, 9, tzinfo=timezone(timedelta(hours=1)))
    assert timestamp(t) == "2026-03-02 10:05:09"
    assert timestamp(t, seconds=False) == "2026-03-02 10:05"
    assert timestamp("2026-03-02T10:05:09+00:00") == "2026-03-02 10:05:09"
    assert timestamp(datetime(2026, 3, 2, 10, 5, 9)) == "2026-03-02 10:05:09"  # naive is UTC
    assert timestamp(None) == "-" and timestamp(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01 00:00:00"


def test_first_line() -> None:
    assert first_line("  make > /tmp/log 2>&1\necho done\n") == "make > /tmp/log 2>&1 …"
    assert first_line("x" * 81) == "x" * 80 + " …" and first_line("x" * 80) == "x" * 80
    assert first_line("abcdef", limit=3) == "abc …"
    assert first_line(None) == "-" and first_line("   \n ") == "-" and first_line("", missing="") == ""

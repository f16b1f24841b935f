"""Constrained field types shared by the definition models (tasks, jobs, topologies, images).

Contract: numbers in definition files are real numbers of the right kind (strict: `true`
is not 1 and `"5"` is not 5, though a whole number is a valid `Number`), finite (no `inf`
or `nan`), and within documented caps:

- `Int`: a whole number; `Port`: 1..65535; `Number`: a finite number (bounds are given where used).
- `Seconds`: a duration, 0 < s <= `MAX_SECONDS` (one day); `Delay`: 0 <= s <= `MAX_SECONDS`.
- `positive_seconds(value, option)`: the same rule as `Seconds` for a command-line option.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field, Strict

from testbed.errors import InputError

MAX_SECONDS = 86_400.0
"""Longest duration a definition may give (24 h): agent time, command, check and step timeouts."""

Int = Annotated[int, Strict()]
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Seconds = Annotated[float, Strict(), Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
Port = Annotated[int, Strict(), Field(ge=1, le=65535)]
Delay = Annotated[float, Strict(), Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)]


def positive_seconds(value: float, option: str) -> float:
    """A duration given on the command line (`--timeout 30`): 0 < value <= `MAX_SECONDS`;
    anything else (`nan`, `inf`, `0`, `-1`) is an `InputError` naming `option`."""
    if math.isnan(value) or not 0 < value <= MAX_SECONDS:
        raise InputError(None, option, f"{value:g} is not a number of seconds in (0, {MAX_SECONDS:g}]")
    return value

"""Egress policy of a lab: what its guests may fetch from outside (`egress:`).

Declared in a topology (YAML), a task (task.toml) or a job (overrides both):

    egress: none                                 # the default: no route out, no proxy
    egress: mirror                               # distribution mirrors and PyPI, through the proxy
    egress: {allow: ["*.example.org", "pypi.org"]}   # the same, plus these hosts

In TOML: `egress = "mirror"` or `[egress]` / `allow = ["*.example.org"]`.

Contracts:
- `EgressSpec.mode` is `none`, `mirror` or `allow`; `allow` lists host patterns: a host name
  (`pypi.org`, also an IPv4 address or `localhost`), or `*.` followed by a domain
  (`*.example.org`: the domain and every name under it). Nothing else is accepted: no other
  wildcards, no ports, no schemes. Patterns are lowercased.
- `effective_egress(job, task, topology)` is the first one given, in that order; none given
  is mode `none`.
- Pure: no I/O.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
HOST_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
PATTERN_RE = re.compile(rf"^(\*\.)?{_LABEL}(\.{_LABEL})*$")


class EgressMode(StrEnum):
    """How a lab's guests reach the outside."""

    NONE = "none"
    MIRROR = "mirror"
    ALLOW = "allow"


class EgressSpec(BaseModel):
    """A lab's egress policy; see the module docstring for the accepted forms."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: EgressMode = EgressMode.NONE
    allow: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _short_forms(cls, data: Any) -> Any:
        if isinstance(data, str):
            if data == EgressMode.ALLOW:
                raise ValueError("'allow' needs its host patterns: egress: {allow: [\"*.example.org\"]}")
            return {"mode": data}
        if isinstance(data, dict) and "allow" in data and "mode" not in data:
            return {"mode": EgressMode.ALLOW, **data}
        return data

    @field_validator("allow", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ValueError("must be a list of host patterns")
        out: list[str] = []
        for item in value:
            if not isinstance(item, str):
                raise ValueError(f"{item!r} is not a host pattern")
            pattern = item.strip().lower().rstrip(".")
            if not PATTERN_RE.match(pattern):
                raise ValueError(
                    f"'{item}' is not a host pattern (a host name like pypi.org, or *.domain like "
                    "*.example.org; no scheme, port or other wildcard)"
                )
            out.append(pattern)
        return tuple(dict.fromkeys(out))

    @model_validator(mode="after")
    def _allow_needs_patterns(self) -> EgressSpec:
        if self.mode == EgressMode.ALLOW and not self.allow:
            raise ValueError("mode 'allow' needs at least one host pattern in 'allow'")
        if self.mode != EgressMode.ALLOW and self.allow:
            raise ValueError(f"'allow' patterns need mode 'allow' (the mode is '{self.mode}')")
        return self

    @property
    def enabled(self) -> bool:
        """Whether the lab gets the proxy at all."""
        return self.mode != EgressMode.NONE


NO_EGRESS = EgressSpec()


def effective_egress(*declared: EgressSpec | None) -> EgressSpec:
    """The first policy given (pass job override, task, topology in that order)."""
    for spec in declared:
        if spec is not None:
            return spec
    return NO_EGRESS

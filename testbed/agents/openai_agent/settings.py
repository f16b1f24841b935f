"""The `openai:MODEL?option=value&...` spec: one dataclass whose fields are the options.

Every field but `model` is an option of the same name; its metadata holds the parser that
turns the query string's text into the value and checks it. An unknown option, an option
given twice, a value that does not parse, or `max_tokens` together with
`max_completion_tokens` is an `InputError` naming the option (CLI exit status 2).

Sampling parameters (`SAMPLING`) default to None and are sent to the endpoint only when
given: reasoning models refuse `temperature`, so none is sent unless the spec sets one.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import parse_qsl, urlparse

from testbed.errors import InputError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "TESTBED_OPENAI_BASE_URL"
SPEC_FIELD = "--agent"

SAMPLING: tuple[str, ...] = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "reasoning_effort")
"""Options passed to the endpoint as request parameters, each only when given."""


def _number(low: float | None = None, high: float | None = None, *, integer: bool = False) -> Callable[[str], Any]:
    def parse(text: str) -> int | float:
        value: int | float = int(text) if integer else float(text)
        if not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high):
            span = f"from {low}" if high is None else f"in [{low}, {high}]"
            raise ValueError(f"must be {span}, got {text}")
        return value

    return parse


def _flag(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be 1 or 0, got '{text}'")


def _url(text: str) -> str:
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"must be an http(s) URL, got '{text}'")
    return text.rstrip("/")


def _pattern(regex: str, what: str) -> Callable[[str], str]:
    compiled = re.compile(regex)

    def parse(text: str) -> str:
        if not compiled.fullmatch(text):
            raise ValueError(f"must be {what}, got '{text}'")
        return text

    return parse


def _option(default: Any, parse: Callable[[str], Any], doc: str) -> Any:
    return field(default=default, metadata={"parse": parse, "doc": doc})


def _default_base_url() -> str:
    return (os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")


@dataclass
class OpenAISettings:
    """How to reach the endpoint, how to sample, and the agent's own limits."""

    model: str
    base_url: str = field(
        default_factory=_default_base_url,
        metadata={"parse": _url, "doc": f"API root (default: env {BASE_URL_ENV}, else {DEFAULT_BASE_URL})"},
    )
    api_key_env: str = _option(
        "OPENAI_API_KEY", _pattern(r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable name"), "variable with the key"
    )
    tools: bool = _option(True, _flag, "1: function calling with a `run` tool; 0: <bash> blocks in text")
    max_steps: int = _option(50, _number(1, integer=True), "most model calls in one run")
    timeout: float = _option(120.0, _number(0.1), "seconds per HTTP request")
    max_retries: int = _option(3, _number(0, 20, integer=True), "SDK retries on 408/409/429/5xx/connection errors")
    context_tokens: int = _option(32768, _number(256, integer=True), "the model's context window, in tokens")
    max_malformed: int = _option(3, _number(1, integer=True), "malformed replies in a row that end the run")
    price_in: float | None = _option(None, _number(0), "USD per 1M prompt tokens (cost per turn)")
    price_out: float | None = _option(None, _number(0), "USD per 1M completion tokens")
    temperature: float | None = _option(None, _number(0, 2), "sampling temperature (sent only when given)")
    top_p: float | None = _option(None, _number(0, 1), "nucleus sampling (sent only when given)")
    max_tokens: int | None = _option(None, _number(1, integer=True), "completion cap, legacy name")
    max_completion_tokens: int | None = _option(None, _number(1, integer=True), "completion cap (reasoning models)")
    seed: int | None = _option(None, _number(integer=True), "sampling seed (sent only when given)")
    reasoning_effort: str | None = _option(None, _pattern(r"[a-z]+", "a word such as low, medium, high"), "effort")

    @classmethod
    def options(cls) -> dict[str, Callable[[str], Any]]:
        """Option name -> parser, for every option."""
        return {f.name: f.metadata["parse"] for f in fields(cls) if "parse" in f.metadata}

    @classmethod
    def from_spec(cls, spec: str) -> OpenAISettings:
        """Parse `openai:MODEL[?k=v&...]`; `InputError` naming the bad option."""
        body = spec.removeprefix("openai:")
        model, _, query = body.partition("?")
        if not model:
            raise InputError(None, SPEC_FIELD, "openai agent needs a model: openai:MODEL")
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError as exc:
            raise InputError(None, SPEC_FIELD, f"bad openai agent options '{query}': {exc}") from exc
        parsers = cls.options()
        values: dict[str, Any] = {}
        for key, text in pairs:
            if key not in parsers:
                known = ", ".join(sorted(parsers))
                raise InputError(None, SPEC_FIELD, f"unknown openai agent option '{key}' (options: {known})")
            if key in values:
                raise InputError(None, SPEC_FIELD, f"openai agent option '{key}' given twice")
            try:
                values[key] = parsers[key](text)
            except ValueError as exc:
                raise InputError(None, SPEC_FIELD, f"openai agent option '{key}': {exc}") from exc
        if "max_tokens" in values and "max_completion_tokens" in values:
            raise InputError(None, SPEC_FIELD, "give max_tokens or max_completion_tokens, not both")
        settings = cls(model=model, **values)
        cap = settings.completion_cap
        if cap is not None and cap * 2 > settings.context_tokens:
            raise InputError(
                None,
                SPEC_FIELD,
                f"completion cap {cap} leaves too little of context_tokens "
                f"{settings.context_tokens} for the conversation (at most half)",
            )
        return settings

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters that were given, as request parameters."""
        return {name: getattr(self, name) for name in SAMPLING if getattr(self, name) is not None}

    @property
    def completion_cap(self) -> int | None:
        """The completion token cap that was given, under either name."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens

"""The model endpoint, through the official `openai` SDK, and what its failures mean.

Contracts:
- One `AsyncOpenAI(base_url, api_key, timeout, max_retries)` per agent, made in `start`
  (never at construction, so building an agent to validate a spec opens nothing). The key
  is read from the variable named by `api_key_env`; when it is unset or empty the
  placeholder `EMPTY` is sent (servers without authentication ignore it).
- Retries are the SDK's (openai 3.x): on 408, 409, 429, 5xx, connection errors and
  timeouts, up to `max_retries` times. Each waits what the response's `Retry-After` asks
  (seconds or an HTTP date; `retry-after-ms` too), up to 120 s, else a jittered exponential
  backoff (0.5 s doubling up to 8 s, each shortened by a random 0-25 %). A `Retry-After`
  beyond 120 s is not waited for: the call fails at once. tests/unit/agents/test_client.py
  measures these delays on the server's own clock, so an SDK that changes them fails there.
- `classify` turns a failed call into the run's outcome: a context-length error (HTTP 400,
  413 or 422 whose error code or message says the prompt exceeds the model's context, in
  the forms of OpenAI, vLLM, llama.cpp, TGI and others: `CONTEXT_CODES`,
  `CONTEXT_MESSAGE`) is the model's own failure, `AgentFailure`; every other failure
  (connection refused, timeouts, 5xx or 429 past the retries, any other 4xx such as a
  parameter the model rejects, a reply that is not JSON or holds no choices) is
  `HarnessError`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import openai

from testbed.errors import AgentFailure, HarnessError, TestbedError

NO_KEY = "EMPTY"
DETAIL_CHARS = 500

CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"})
"""Error codes / types that mean the prompt does not fit (OpenAI; llama.cpp; LiteLLM and others)."""

CONTEXT_MESSAGE = re.compile(
    r"maximum context length"  # OpenAI, vLLM: "This model's maximum context length is 8192 tokens..."
    r"|context length exceeded|context_length_exceeded"
    r"|exceeds? the available context size"  # llama.cpp server
    r"|context size has been exceeded"  # older llama.cpp
    r"|longer than the maximum model length"  # vLLM: "The decoder prompt (length N) is longer than ..."
    r"|too large for model with \d+ maximum context length"  # Mistral
    r"|prompt is too long"  # Anthropic-compatible gateways
    r"|must be <= \d+\. Given: \d+ `inputs` tokens"  # TGI
    r"|reduce the length of the (?:messages|prompt)",
    re.IGNORECASE,
)
CONTEXT_STATUSES = frozenset({400, 413, 422})


@dataclass(frozen=True)
class ModelReply:
    """One successful call: the assistant message as returned (None fields dropped, extra
    fields such as `reasoning_content` kept), its finish reason, token usage, model name."""

    message: dict[str, Any]
    finish_reason: str | None
    model: str
    usage: dict[str, int] = field(default_factory=dict)


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or exc.message)[:DETAIL_CHARS]


def is_context_overflow(exc: openai.APIStatusError) -> bool:
    """Does this HTTP error say the prompt exceeds the model's context window?"""
    if exc.status_code not in CONTEXT_STATUSES:
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    codes = {str(exc.code), str(body.get("code")), str(body.get("type"))}
    return bool(codes & CONTEXT_CODES) or bool(CONTEXT_MESSAGE.search(f"{exc.message} {body.get('message', '')}"))


def classify(exc: openai.APIError, base_url: str, retries: int) -> TestbedError:
    """The run-level meaning of a failed call (see the module docstring)."""
    where = f"model endpoint {base_url}"
    if isinstance(exc, openai.APIStatusError):
        if is_context_overflow(exc):
            return AgentFailure(f"context length exceeded: {_detail(exc)}")
        if isinstance(exc, openai.RateLimitError):
            return HarnessError(f"{where} still rate limited (HTTP 429) after {retries} retries: {_detail(exc)}")
        return HarnessError(f"{where} failed: HTTP {exc.status_code}: {_detail(exc)}")
    if isinstance(exc, openai.APITimeoutError):
        return HarnessError(f"{where} timed out (after {retries} retries)")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        reason = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        return HarnessError(f"{where} unreachable after {retries} retries: {reason}"[: DETAIL_CHARS + 200])
    return HarnessError(f"{where} gave an unexpected response: {type(exc).__name__}: {exc}"[: DETAIL_CHARS + 200])


class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint."""

    def __init__(self, base_url: str, api_key_env: str, timeout: float, max_retries: int) -> None:
        self.base_url = base_url
        self.max_retries = max_retries
        self._sdk = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=os.environ.get(api_key_env) or NO_KEY,
            timeout=timeout,
            max_retries=max_retries,
        )

    async def complete(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> ModelReply:
        """One call (`params`: tools and sampling parameters, sent as given); raises
        `AgentFailure` or `HarnessError` as `classify` says."""
        request: dict[str, Any] = {"model": model, "messages": messages, **params}
        try:
            completion = await self._sdk.chat.completions.create(**request)
        except openai.APIError as exc:
            raise classify(exc, self.base_url, self.max_retries) from exc
        except ValueError as exc:  # a 200 whose body is not JSON: the SDK lets the decoder's error through
            raise HarnessError(f"model endpoint {self.base_url} sent an unreadable reply: {exc}") from exc
        return self._reply(completion, model)

    def _reply(self, completion: Any, model: str) -> ModelReply:
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices or getattr(choices[0], "message", None) is None:
            raise HarnessError(f"model endpoint {self.base_url} returned no choices: {str(completion)[:DETAIL_CHARS]}")
        choice = choices[0]
        dumped = choice.message.model_dump(mode="json")
        usage = completion.usage.model_dump(mode="json") if getattr(completion, "usage", None) else {}
        return ModelReply(
            message={k: v for k, v in dumped.items() if v is not None},
            finish_reason=choice.finish_reason,
            model=str(getattr(completion, "model", None) or model),
            usage={k: v for k, v in usage.items() if k.endswith("_tokens") and isinstance(v, int)},
        )

    async def close(self) -> None:
        await self._sdk.close()

"""`ChatClient` over real HTTP to `FakeOpenAI`: retries, `Retry-After`, and what failures mean.

Delays are measured on the server's clock: from when a reply left its handler to when the
retry arrived (`Received.replied_at` / `Received.at`), or against the wall-clock date a
`Retry-After` header named (`Received.wall`).
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from typing import Any

import pytest
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from testbed.agents.openai_agent.client import ChatClient, ModelReply
from testbed.errors import AgentFailure, HarnessError
from tests.unit.agents.openai_server import Completion, Failure, FakeOpenAI, free_port, text_reply

MESSAGES = [{"role": "user", "content": "hello"}]


def call(base_url: str, *, retries: int = 2, timeout: float = 10.0, params: dict[str, Any] | None = None) -> ModelReply:
    async def go() -> ModelReply:
        client = ChatClient(base_url, "FAKE_KEY", timeout, retries)
        try:
            return await client.complete("m", MESSAGES, params or {})
        finally:
            await client.close()

    return asyncio.run(go())


def gap(fake: FakeOpenAI, i: int) -> float:
    """Seconds between the reply to request i-1 leaving the server and request i arriving."""
    return fake.received[i].at - fake.received[i - 1].replied_at


def test_retry_after_seconds_is_waited_on_429() -> None:
    with FakeOpenAI([Failure(429, headers={"Retry-After": "1"}), text_reply("ok")]) as fake:
        reply = call(fake.base_url)
    assert reply.message["content"] == "ok" and len(fake.received) == 2
    # the SDK's own backoff for a first retry is at most 0.5 s: a gap of 1 s is the header's
    assert 1.0 <= gap(fake, 1) < 2.5


def test_retry_after_http_date_is_waited_on_429() -> None:
    asked: list[float] = []

    def rate_limited(body: dict[str, Any]) -> Failure:
        when = math.floor(time.time()) + 3  # HTTP dates have 1 s resolution: 2-3 s from now
        asked.append(when)
        return Failure(429, headers={"Retry-After": email.utils.formatdate(when, usegmt=True)})

    with FakeOpenAI([rate_limited, text_reply("ok")]) as fake:
        call(fake.base_url)
    assert len(fake.received) == 2
    assert fake.received[1].wall >= asked[0] - 0.05  # not before the date the server named
    assert fake.received[1].wall < asked[0] + 1.5
    assert gap(fake, 1) >= 1.9


def test_5xx_backoff_is_exponential_and_jittered_then_succeeds() -> None:
    with FakeOpenAI([500, 503, text_reply("ok")]) as fake:
        reply = call(fake.base_url, retries=2)
    assert reply.message["content"] == "ok" and len(fake.received) == 3
    first, second = gap(fake, 1), gap(fake, 2)
    assert 0.375 <= first < 1.5  # 0.5 s less up to 25 % jitter
    assert 0.75 <= second < 2.5  # doubled
    assert second > first


def test_endpoint_down_is_a_harness_error() -> None:
    with FakeOpenAI([503, 503]) as fake, pytest.raises(HarnessError, match="HTTP 503"):
        call(fake.base_url, retries=1)
    assert len(fake.received) == 2
    with (
        FakeOpenAI([Failure(429, headers={"Retry-After": "0.1"})] * 2) as fake,
        pytest.raises(HarnessError, match="rate limited"),
    ):
        call(fake.base_url, retries=1)
    with pytest.raises(HarnessError, match="unreachable"):
        call(f"http://127.0.0.1:{free_port()}/v1", retries=0)


def test_timeout_is_a_harness_error() -> None:
    def slow(body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(1.0)
        return text_reply("late")

    with FakeOpenAI([slow]) as fake, pytest.raises(HarnessError, match="timed out"):
        call(fake.base_url, retries=0, timeout=0.3)


@pytest.mark.parametrize(
    "failure",
    [
        # OpenAI
        Failure(400, {"message": "This model's maximum context length is 8192 tokens. However, your messages "
                      "resulted in 9000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded",
                      "param": "messages"}),
        # vLLM: the error object is the whole body, code is the HTTP status
        Failure(400, body={"object": "error", "message": "This model's maximum context length is 4096 tokens. "
                           "However, you requested 5000 tokens.", "type": "BadRequestError", "param": None,
                           "code": 400}),
        Failure(400, body={"object": "error", "message": "The decoder prompt (length 5000) is longer than the maximum "
                           "model length of 4096.", "type": "BadRequestError", "code": 400}),
        # llama.cpp server
        Failure(400, {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                      "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}),
        # TGI
        Failure(422, {"message": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
                      "Given: 5000 `inputs` tokens and 20 `max_new_tokens`", "error_type": "validation"}),
    ],
)  # fmt: skip
def test_context_length_errors_are_the_agents_failure(failure: Failure) -> None:
    with FakeOpenAI([failure]) as fake, pytest.raises(AgentFailure, match="context length exceeded"):
        call(fake.base_url)
    assert len(fake.received) == 1  # a 4xx is not retried


@pytest.mark.parametrize(
    ("failure", "match"),
    [
        (Failure(400, {"message": "Unsupported parameter: 'temperature' is not supported with this model.",
                       "type": "invalid_request_error", "code": "unsupported_parameter"}), "HTTP 400: Unsupported"),
        (Failure(401, {"message": "Incorrect API key provided", "type": "invalid_request_error"}), "HTTP 401"),
        (Failure(404, {"message": "The model `m` does not exist", "code": "model_not_found"}), "HTTP 404"),
    ],
)  # fmt: skip
def test_other_rejections_are_harness_errors(failure: Failure, match: str) -> None:
    with FakeOpenAI([failure]) as fake, pytest.raises(HarnessError, match=match):
        call(fake.base_url)


def test_reply_keeps_reasoning_and_usage_and_sends_params(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-test")
    message = {"role": "assistant", "content": "hi", "reasoning_content": "first I think"}
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    with FakeOpenAI([Completion(message, usage=usage)]) as fake:
        reply = call(fake.base_url, params={"temperature": 0.2, "seed": 7})
    assert reply.message == {"role": "assistant", "content": "hi", "reasoning_content": "first I think"}
    assert reply.usage == usage and reply.finish_reason == "stop" and reply.model == "m"
    body = fake.requests[0]
    assert body["temperature"] == 0.2 and body["seed"] == 7 and body["messages"] == MESSAGES
    assert fake.received[0].headers["authorization"] == "Bearer sk-test"


def test_no_key_sends_the_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAKE_KEY", raising=False)
    with FakeOpenAI([text_reply("ok")]) as fake:
        call(fake.base_url)
    assert fake.received[0].headers["authorization"] == "Bearer EMPTY"


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        (PlainTextResponse("oops"), "no choices: oops"),
        (Response("{not json", media_type="application/json"), "unreadable reply"),
        (JSONResponse({"id": "x", "object": "chat.completion", "model": "m", "choices": []}), "no choices"),
        (JSONResponse({"choices": "many"}), "no choices"),
    ],
)
def test_a_reply_that_is_not_a_completion_is_a_harness_error(response: Response, problem: str) -> None:
    with FakeOpenAI([]) as fake:
        fake._reply = lambda body: response  # type: ignore[method-assign]
        with pytest.raises(HarnessError, match=problem):
            call(fake.base_url, retries=0)

"""`openai:MODEL?option=value&...`: options, defaults, and bad input named."""

from __future__ import annotations

import pytest

import testbed.agents.openai_agent as package
from testbed.agents.openai_agent.settings import SAMPLING, OpenAISettings
from testbed.errors import InputError


def test_defaults_send_no_sampling_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_OPENAI_BASE_URL", raising=False)
    settings = OpenAISettings.from_spec("openai:o4-mini")
    assert settings.model == "o4-mini" and settings.base_url == "https://api.openai.com/v1"
    assert settings.sampling() == {}  # no temperature unless asked for: reasoning models refuse it
    limits = (settings.context_tokens, settings.max_malformed, settings.max_retries, settings.tools)
    assert limits == (32768, 3, 3, True)


def test_every_option_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_OPENAI_BASE_URL", "http://example.invalid/v1/")
    assert OpenAISettings.from_spec("openai:m").base_url == "http://example.invalid/v1"
    spec = (
        "openai:org/model-7b?base_url=http://127.0.0.1:8000/v1/&api_key_env=MY_KEY&tools=0&max_steps=9&timeout=5"
        "&max_retries=0&context_tokens=8192&max_malformed=2&price_in=0.15&price_out=0.6&temperature=0.5"
        "&top_p=0.9&max_completion_tokens=512&seed=42&reasoning_effort=low"
    )
    s = OpenAISettings.from_spec(spec)
    assert (s.model, s.base_url, s.api_key_env, s.tools, s.max_steps, s.timeout) == (
        "org/model-7b", "http://127.0.0.1:8000/v1", "MY_KEY", False, 9, 5.0,
    )  # fmt: skip
    assert (s.max_retries, s.context_tokens, s.max_malformed, s.price_in, s.price_out) == (0, 8192, 2, 0.15, 0.6)
    assert s.sampling() == {
        "temperature": 0.5, "top_p": 0.9, "max_completion_tokens": 512, "seed": 42, "reasoning_effort": "low",
    }  # fmt: skip
    assert s.completion_cap == 512
    assert OpenAISettings.from_spec("openai:m?max_tokens=64").sampling() == {"max_tokens": 64}


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("openai:", "needs a model"),
        ("openai:m?nope=1", "unknown openai agent option 'nope'"),
        ("openai:m?temperature=hot", "option 'temperature'"),
        ("openai:m?temperature=3", "option 'temperature': must be in [0, 2]"),
        ("openai:m?temperature=nan", "option 'temperature'"),
        ("openai:m?max_steps=0", "option 'max_steps'"),
        ("openai:m?seed=1.5", "option 'seed'"),
        ("openai:m?tools=maybe", "option 'tools'"),
        ("openai:m?base_url=ftp://x", "option 'base_url'"),
        ("openai:m?api_key_env=1BAD", "option 'api_key_env'"),
        ("openai:m?reasoning_effort=LOW!", "option 'reasoning_effort'"),
        ("openai:m?seed=1&seed=2", "'seed' given twice"),
        ("openai:m?max_tokens=10&max_completion_tokens=10", "not both"),
        ("openai:m?context_tokens=1000&max_tokens=600", "at most half"),
        ("openai:m?oops", "bad openai agent options"),
    ],
)
def test_bad_specs_are_input_errors_naming_the_option(spec: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        OpenAISettings.from_spec(spec)
    assert err.value.field == "--agent" and problem in err.value.problem


def test_every_option_is_documented_in_the_package_docstring() -> None:
    doc = package.__doc__ or ""
    for name in OpenAISettings.options():
        if name in ("price_in", "price_out"):
            name = "price_in/out"
        assert name in doc, name
    assert set(SAMPLING) <= set(OpenAISettings.options())

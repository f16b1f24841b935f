"""The context window policy on conversations built here, with small budgets."""

from __future__ import annotations

import random
from typing import Any

from testbed.agents.openai_agent.context import (
    DROPPED_TURNS,
    ELIDED_OUTPUT,
    ContextWindow,
    completion_reserve,
    raw_tokens,
)

Message = dict[str, Any]
HEAD: list[Message] = [
    {"role": "system", "content": "You are an administrator. " * 10},
    {"role": "user", "content": "Fix the service."},
]


def tool_turn(n: int, output_chars: int, calls: int = 1) -> list[Message]:
    ids = [f"c{n}_{k}" for k in range(calls)]
    assistant = {
        "role": "assistant",
        "content": f"step {n}",
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "run", "arguments": '{"command": "ls"}'}} for i in ids
        ],
    }
    return [assistant] + [{"role": "tool", "tool_call_id": i, "content": f"{n}:" + "x" * output_chars} for i in ids]


def text_turn(n: int, output_chars: int) -> list[Message]:
    return [
        {"role": "assistant", "content": f"<bash>cmd {n}</bash>"},
        {"role": "user", "content": f"$ cmd {n}\n" + "y" * output_chars},
    ]


def conversation(turns: list[list[Message]]) -> list[Message]:
    return [*HEAD, *(m for turn in turns for m in turn)]


def assert_well_formed(view: list[Message]) -> None:
    """Head first; every tool message answers a call of the assistant message before it, and
    every call is answered before the next assistant message."""
    assert view[:2] == HEAD
    open_calls: set[str] = set()
    for message in view[2:]:
        if message["role"] == "assistant":
            assert not open_calls, f"unanswered calls {open_calls}"
            open_calls = {c["id"] for c in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, "orphan tool message"
            open_calls.discard(message["tool_call_id"])


def test_a_conversation_that_fits_is_sent_as_it_is() -> None:
    messages = conversation([tool_turn(i, 100) for i in range(3)])
    window = ContextWindow(10_000)
    assert window.fit(messages) == messages


def test_older_outputs_are_elided_first_oldest_first() -> None:
    messages = conversation([tool_turn(i, 2000) for i in range(5)])  # ~500 tokens per output
    window = ContextWindow(1400)
    view = window.fit(messages)
    assert_well_formed(view)
    assert window.estimate(view) <= 1400
    outputs = [m["content"] for m in view if m["role"] == "tool"]
    assert len(outputs) == 5  # every call still answered
    assert outputs[:3] == [ELIDED_OUTPUT] * 3  # the oldest three
    assert outputs[3].startswith("3:") and outputs[4].startswith("4:")  # the most recent ones whole
    assert [m["content"] for m in view if m["role"] == "assistant"] == [f"step {i}" for i in range(5)]
    assert messages[2 + 1]["content"].startswith("0:")  # the agent's own conversation is untouched


def test_whole_turns_are_dropped_when_eliding_outputs_is_not_enough() -> None:
    turns = [tool_turn(i, 40, calls=3) for i in range(30)]  # many small turns: the calls themselves weigh
    messages = conversation(turns)
    window = ContextWindow(900)
    view = window.fit(messages)
    assert_well_formed(view)
    assert window.estimate(view) <= 900
    marker = view[2]
    assert marker["role"] == "user" and marker["content"] == DROPPED_TURNS.format(n=window._dropped)
    assert window._dropped > 0
    assert view[-4:] == turns[-1]  # the most recent turn, whole
    first_kept = view[3]
    assert first_kept == turns[window._dropped][0]


def test_the_most_recent_turn_is_sent_even_when_it_alone_is_too_big() -> None:
    messages = conversation([tool_turn(0, 100), tool_turn(1, 40_000)])
    view = ContextWindow(500).fit(messages)
    assert_well_formed(view)
    assert view[-2:] == messages[-2:]  # whole: the endpoint decides whether it fits


def test_text_mode_results_are_elided_too() -> None:
    messages = conversation([text_turn(i, 2000) for i in range(4)])
    view = ContextWindow(1200).fit(messages)
    results = [m["content"] for m in view[2:] if m["role"] == "user"]
    assert results[0] == ELIDED_OUTPUT and results[-1].startswith("$ cmd 3")


def test_elision_is_sticky_so_the_sent_prefix_is_stable() -> None:
    turns = [tool_turn(i, 2000) for i in range(4)]
    window = ContextWindow(1400)
    first = window.fit(conversation(turns))
    turns.append(tool_turn(4, 10))
    second = window.fit(conversation(turns))
    assert second[: len(first) - 2] == first[: len(first) - 2]  # all but the then-latest turn: unchanged
    window.budget = 100_000  # even with room again, what was elided stays elided
    assert window.fit(conversation(turns))[: len(first) - 2] == first[: len(first) - 2]


def test_random_conversations_keep_the_invariants() -> None:
    rng = random.Random(7)
    for _ in range(120):
        turns = [
            (tool_turn(i, rng.randrange(0, 6000), rng.randrange(1, 4)) if rng.random() < 0.7
             else text_turn(i, rng.randrange(0, 6000)))
            for i in range(rng.randrange(1, 25))
        ]  # fmt: skip
        budget = rng.randrange(200, 8000)
        window = ContextWindow(budget)
        view = window.fit(conversation(turns))
        assert_well_formed(view)
        assert view[-len(turns[-1]) :] == turns[-1]
        kept_all_but_last = window.estimate(view) - window.estimate(turns[-1])
        assert window.estimate(view) <= budget or kept_all_but_last <= window.estimate(HEAD) + 40


def test_calibration_from_reported_prompt_tokens() -> None:
    messages = conversation([tool_turn(0, 4000)])
    window = ContextWindow(10_000)
    raw = sum(raw_tokens(m) for m in messages)
    window.calibrate(messages, raw * 2)
    assert window.scale == 2.0 and window.estimate(messages) == 2 * raw
    window.calibrate(messages, raw * 100)
    assert window.scale == 4.0  # clamped
    window.calibrate(messages, None)
    assert window.scale == 4.0  # no usage reported: unchanged
    window.calibrate(messages, 1)
    assert window.scale == 0.5


def test_completion_reserve() -> None:
    assert completion_reserve(32768, None) == 4096
    assert completion_reserve(2048, None) == 512
    assert completion_reserve(32768, 1000) == 1000

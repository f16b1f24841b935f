"""The fake node parts: a scripted node answers through `answer`, a fake session counts calls."""

from __future__ import annotations

import asyncio

import pytest

from testbed.errors import HarnessError
from testbed.testing.nodes import FakeSession, ScriptedNode


class _Node(ScriptedNode):
    async def answer(self, command: str) -> tuple[str, int]:
        return ("up\n", 0) if command == "status" else ("", 3)


def test_scripted_node_answers_and_is_its_own_source() -> None:
    node = _Node("web")
    assert node.as_source("agent") is node and node.domain == "fake-web"
    result = asyncio.run(node.exec("status"))
    assert result.exit_code == 0 and result.stdout == "up\n" and result.command == "status"
    assert asyncio.run(node.exec("other")).exit_code == 3
    assert asyncio.run(ScriptedNode("n").exec("x")).stdout == "ran: x\n"


def test_unreachable_session_refuses_and_counts() -> None:
    session = FakeSession(reachable=False)
    with pytest.raises(HarnessError):
        asyncio.run(session.connect())
    asyncio.run(session.close())
    assert session.connects == 1 and session.closes == 1

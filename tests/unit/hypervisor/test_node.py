"""`LabNode.is_running`: what counts as a guest that stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from testbed.hypervisor.node import LabNode


class StateSequence:
    """A hypervisor whose domain reports the given states, one per call (the last repeats)."""

    def __init__(self, *states: str) -> None:
        self.states = list(states)
        self.calls = 0

    async def domain_state(self, name: str) -> str:
        self.calls += 1
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


def node(hv: Any) -> LabNode:
    return LabNode("n", None, "tb-x-n", "127.0.0.1", {}, Path("/nonexistent"), None, hypervisor=hv)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("states", "alive"),
    [
        (("running",), True),
        (("paused",), True),  # libvirt's fake reboot pauses the domain while it resets it
        (("other",), True),  # "being shut down" on the way to the reset
        (("shutoff",), False),
        (("crashed",), False),
        (("missing",), False),
        (("shutoff", "running"), True),  # one reading in the reset window is not a stop
    ],
)
def test_only_a_confirmed_stop_is_not_running(states: tuple[str, ...], alive: bool) -> None:
    hv = StateSequence(*states)
    assert asyncio.run(node(hv).is_running()) is alive
    assert hv.calls == (1 if states[0] not in ("shutoff", "crashed", "missing") else 2)

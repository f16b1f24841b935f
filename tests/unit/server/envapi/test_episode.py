"""What an observation looks like on the wire: every field of `Observation`, nothing else."""

from __future__ import annotations

import dataclasses

from testbed.agents.base import Observation
from testbed.server.envapi.episode import observation_dict


def test_observation_dict_carries_every_field() -> None:
    obs = Observation("web", "systemctl status nginx", "out", "err", None, timed_out=True, message="x", duration_ms=7)
    wire = observation_dict(obs)
    assert set(wire) == {f.name for f in dataclasses.fields(Observation)}
    assert wire["exit_code"] is None and wire["timed_out"] is True and wire["duration_ms"] == 7
    assert wire["node"] == "web" and wire["message"] == "x"

"""docker/podman/nerdctl: kill and forced removal."""

from __future__ import annotations

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import Fact, SignalOp


def test_kill_sends_sigkill_unless_told_otherwise() -> None:
    assert effects_of("docker kill web db").steps[0].signals == [
        SignalOp("docker", "container", (), True, ("web", "db"))
    ]
    assert effects_of("podman kill -s HUP web").steps[0].signals == [
        SignalOp("podman", "container", ("HUP",), False, ("web",))
    ]
    assert effects_of("docker ps").steps[0].signals == []


def test_forced_removal() -> None:
    assert effects_of("docker rm -f web").steps[0].bypasses == [Fact("docker-force", ("-f",))]
    assert effects_of("docker image rm -f x").steps[0].bypasses == [Fact("docker-force", ("-f",))]
    assert effects_of("docker logs -f web").steps[0].bypasses == []

"""processes: kernel threads and the snapshot script with its children are left out (procps
and busybox ps)."""

from __future__ import annotations

from typing import Any


def test_debian_processes_exclude_kernel_threads_and_the_probe(debian: dict[str, Any]) -> None:
    procs = debian["processes"]
    pids = {p["pid"] for p in procs["processes"]}
    assert {2, 3, 14}.isdisjoint(pids)
    assert {4242, 4290}.isdisjoint(pids)  # the script and its ps child
    assert 4240 in pids  # its parent (the ssh session's sh -c) is not the probe's own
    assert procs["kernel_threads"] == 3 and procs["excluded_self"] == 2
    worker = next(p for p in procs["processes"] if p["pid"] == 1202)
    assert worker == {"pid": 1202, "ppid": 1201, "user": "www-data", "command": "nginx: worker process"}


def test_rhel_processes_exclude_the_probe(rhel: dict[str, Any]) -> None:
    assert rhel["processes"]["excluded_self"] == 2


def test_alpine_busybox_processes(alpine: dict[str, Any]) -> None:
    procs = alpine["processes"]
    pids = [p["pid"] for p in procs["processes"]]
    assert 4242 not in pids and 4250 not in pids and 3010 in pids
    assert 2 not in pids and 3 not in pids
    assert "unparsed" not in procs
    redis = next(p for p in procs["processes"] if p["pid"] == 2610)
    assert redis["user"] == "redis" and redis["command"] == "/usr/bin/redis-server 127.0.0.1:6379"

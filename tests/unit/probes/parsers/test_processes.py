"""processes: kernel threads and the snapshot script with its children are left out (procps
and busybox ps)."""

from __future__ import annotations

from typing import Any

from testbed.probes.parsers.processes import descendants


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


def test_descendants_of_several_roots_and_a_looping_table() -> None:
    parent = {1: 0, 10: 1, 11: 10, 12: 11, 20: 1, 21: 20, 30: 0}
    assert descendants({10}, parent) == {10, 11, 12}
    assert descendants({11, 20}, parent) == {11, 12, 20, 21}
    assert descendants({99}, parent) == {99}
    assert descendants({5}, {5: 6, 6: 5}) == {5, 6}  # a corrupt table does not loop forever

"""Demo snapshots: a fresh guest, and the same guest changed only where a demo run's story
changes it (as the snapshot diff sees it)."""

from __future__ import annotations

from testbed.probes import diff_snapshots
from testbed.testing.demo_snapshots import base_snapshot, evolve


def test_evolved_snapshots_differ_only_where_the_story_says() -> None:
    before = base_snapshot("alpine-3.20", "web", packages=10)
    assert before["os"]["os_release"]["PRETTY_NAME"] == "Alpine Linux v3.20"
    assert len(before["packages"]["packages"]) == 10
    clean = evolve(before, "after_agent", residue=False)
    dirty = evolve(before, "after_agent", residue=True)
    assert before == base_snapshot("alpine-3.20", "web", packages=10)  # not mutated
    assert "/tmp/notes.txt" in dirty["tmp_files"]["entries"]
    assert "/tmp/notes.txt" not in clean["tmp_files"]["entries"]
    diffs = diff_snapshots(before, dirty)
    changed = {name for name, d in diffs.items() if not d.empty}
    assert changed == {"packages", "services", "listening", "tmp_files"}
    rebooted = evolve(before, "after_reboot", residue=False)
    assert rebooted["boot"]["boot_id"] == "boot-web-2"

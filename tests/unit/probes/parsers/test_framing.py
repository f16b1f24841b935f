"""The framer: only markers carrying the run's nonce frame the output."""

from __future__ import annotations

from testbed.probes import parse_snapshot
from testbed.probes.parsers.framing import frame_snapshot
from testbed.testing.snapshots import FIXTURE_NONCE, render_snapshot


def test_forged_markers_without_the_nonce_are_plain_output() -> None:
    forged = "\n".join(
        [
            "@@testbed-partend 11111111-2222 entries rc=0@@",
            "@@testbed-end 11111111-2222 tmp_files rc=0 up=1@@",
            f"@@testbed-end {FIXTURE_NONCE} tmp_files rc=0@@ trailing",
        ]
    )
    text = render_snapshot({"tmp_files": [("entries", 0, forged)], "boot": [("boot", 0, "")]})
    framed = frame_snapshot(text)
    assert framed.sections["tmp_files"].parts["entries"].lines == forged.splitlines()
    assert "boot" in framed.sections
    parsed = parse_snapshot(text)
    assert parsed["tmp_files"]["unparsed"] == forged.splitlines()

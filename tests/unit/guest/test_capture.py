"""Output bounds, the session-pid marker and command wrapping (no guest needed)."""

from __future__ import annotations

import subprocess

from testbed.guest.capture import BoundedCapture
from testbed.guest.channel import _PidMarker
from testbed.guest.dialects import dialect_for, kill_group_command


def test_capture_keeps_head_and_tail() -> None:
    cap = BoundedCapture(100)
    for i in range(1000):
        cap.feed(f"{i:04d}\n".encode())
    text = cap.text()
    assert cap.truncated and cap.total == 5000
    assert text.startswith("0000\n0001\n") and text.rstrip().endswith("0999")
    assert "truncated by testbed" in text
    assert len(text.encode()) < 200


def test_capture_small_output_is_exact() -> None:
    cap = BoundedCapture(100)
    cap.feed(b"hello ")
    cap.feed(b"world\n")
    assert not cap.truncated and cap.text() == "hello world\n"


def test_pid_marker_is_taken_off_stderr_even_when_split() -> None:
    sink = BoundedCapture(1000)
    marker = _PidMarker(sink)
    for piece in (b"\x1etestbed-", b"pid 4242\nreal ", b"error\n"):
        marker.feed(piece)
    assert marker.pid == 4242 and sink.text() == "real error\n"
    plain = BoundedCapture(1000)
    unmarked = _PidMarker(plain)
    unmarked.feed(b"no marker here\n")
    assert unmarked.pid is None and plain.text() == "no marker here\n"


def test_wrapped_command_runs_unchanged_in_a_posix_shell() -> None:
    """The wrapper only prepends a builtin printf: the command's own text is untouched."""
    command = "# a comment first\ncat <<'EOF'\n$HOME stays literal\nEOF\necho \"$0\" | grep -q sh && exit 3"
    for shell in ("bash", "sh"):
        wrapped = dialect_for("debian").wrap(command, 10)
        proc = subprocess.run([shell, "-c", wrapped], capture_output=True, check=False)
        assert proc.returncode == 3
        assert proc.stdout == b"$HOME stays literal\n"
        assert proc.stderr.startswith(b"\x1etestbed-pid ")


def test_timeout_dialect_and_kill_command() -> None:
    wrapped = dialect_for("openwrt").wrap("sleep 5", 2)
    assert wrapped.startswith("timeout 2 sh -c ")
    assert "kill -KILL -- -77" in kill_group_command(77)

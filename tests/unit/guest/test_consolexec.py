"""The B/E/F framing of a console command's output, including an interrupt that reaches the
shell before the command line ran (then no B marker ever comes)."""

from __future__ import annotations

from testbed.guest.consolexec import _Run


def _run() -> _Run:
    return _Run(b"abc123", 1024, "trailer")


def test_output_between_markers_and_the_status() -> None:
    run = _run()
    run.feed(b"echo of the line\r\n\x1eBabc123\nhello\n\x1eEabc123 3\nwarn\n", crlf=False)
    assert not run.finished
    run.feed(b"\x1eFabc123\n", crlf=False)
    assert run.finished and run.status == 3
    assert run.out.text() == "hello\n" and run.err.text() == "warn\n"


def test_an_interrupt_before_the_command_started_is_closed_by_the_retyped_trailer() -> None:
    run = _run()
    run.feed(b"printf '\\036Babc123\\n'; sh /run/c ^C\r\n", crlf=False)  # the echo only
    run.interrupt(crlf=False)
    run.feed(b"root@r1:~# \x1eEabc123 130\n\x1eFabc123\n", crlf=False)
    assert run.finished and run.status == 130 and run.out.text() == ""


def test_an_interrupt_keeps_what_was_printed_and_drops_the_echo_after() -> None:
    run = _run()
    run.feed(b"\x1eBabc123\nstarted\n", crlf=False)
    run.interrupt(crlf=False)
    run.feed(b"^C\r\nroot@r1:~# printf trailer\r\n\x1eEabc123 130\n\x1eFabc123\n", crlf=False)
    assert run.finished and run.out.text() == "started\n"

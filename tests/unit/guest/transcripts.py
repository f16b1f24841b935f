"""Console transcripts: what a device's serial console prints, step by step, and what
testbed answers. `debian_getty` is Debian 12's agetty and bash (the frr-router-console
image) as its console shows them — boot messages interleaved with the prompt, bash's
bracketed-paste escapes around its prompt; the vendor transcripts are written from the
devices' documented console banners and prompts (none of those images runs here)."""

from __future__ import annotations

Transcript = list[tuple[bytes | None, bytes]]

BASH_PROMPT = b"\x1b[?2004hroot@testbed:~# "

debian_getty: Transcript = [
    (None, b"[   41.12] random: crng init done\r\n\r\nDebian GNU/Linux 12 testbed ttyS0\r\n\r\ntestbed login: "),
    (
        b"\r",
        b"[   43.50] systemd-journald[172]: Time spent on flushing\r\n"
        b"\r\nDebian GNU/Linux 12 testbed ttyS0\r\n\r\ntestbed login: ",
    ),
    (b"root\r", b"root\r\nPassword: "),
    (
        b"testbed\r",
        b"\r\nLinux testbed 6.1.0-28-cloud-amd64 #1 SMP Debian x86_64\r\n\r\nThe programs included...\r\n"
        + BASH_PROMPT,
    ),
]

debian_refused: Transcript = [
    (None, b"\r\ntestbed login: "),
    (b"root\r", b"root\r\nPassword: "),
    (b"testbed\r", b"\r\n\r\nLogin incorrect\r\ntestbed login: "),
]

debian_logged_in: Transcript = [(None, b""), (b"\r", b"\r\n" + BASH_PROMPT)]

vyos: Transcript = [
    (None, b"\r\nWelcome to VyOS - vyos ttyS0\r\n\r\nvyos login: "),
    (b"vyos\r", b"vyos\r\nPassword: "),
    (b"vyos\r", b"\r\nWelcome to VyOS!\r\n\r\n   \xe2\x94\x8c\xe2\x94\x80\xe2\x94\x80 \r\nvyos@vyos:~$ "),
]

openwrt: Transcript = [
    (
        None,
        b"[   12.8] br-lan: port 1(eth0) entered forwarding state\r\nPlease press Enter to activate this console.\r\n",
    ),
    (
        b"\r",
        b"\r\n\r\nBusyBox v1.36.1 (2024-09-23 12:34:46 UTC) built-in shell (ash)\r\n\r\n"
        b"  _______\r\n OpenWrt 23.05.5\r\n\r\nroot@OpenWrt:~# ",
    ),
]

opnsense: Transcript = [
    (None, b"\r\nFreeBSD/amd64 (OPNsense.localdomain) (ttyu0)\r\n\r\nlogin: "),
    (b"root\r", b"root\r\nPassword:"),
    (
        b"opnsense\r",
        b"\r\n  0) Logout                              7) Ping host\r\n  8) Shell\r\n\r\nEnter an option: ",
    ),
    (b"8\r", b"8\r\n\r\nroot@OPNsense:~ # "),
]

sonic: Transcript = [
    (None, b"\r\nDebian GNU/Linux 11 sonic ttyS0\r\n\r\nsonic login: "),
    (b"admin\r", b"admin\r\nPassword: "),
    (
        b"YourPaSsWoRd\r",
        b"\r\nLinux sonic 5.10.0-18-2-amd64 #1 SMP Debian\r\nYou are on\r\n"
        b"  ____   ___  _   _ _  ____\r\nadmin@sonic:~$ ",
    ),
]

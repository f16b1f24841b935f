"""What redirections do: writes, sysctl keys, device writes, sysrq, history truncation."""

from __future__ import annotations

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import Fact, Write


def test_redirect_writes() -> None:
    eff = effects_of("cmd > /etc/motd 2>/dev/null >> log &> /var/log/x < /etc/in").steps[0]
    assert eff.writes == [
        Write("/etc/motd", "abs", "redirect >"),
        Write("log", "suffix", "redirect >>"),
        Write("/var/log/x", "abs", "redirect &>"),
    ]


def test_special_targets() -> None:
    eff = effects_of("echo 1 > /proc/sys/net/ipv4/ip_forward").steps[0]
    assert eff.sysctl_keys == ["net.ipv4.ip_forward"]
    assert effects_of("cat img > /dev/sda").steps[0].disk_writes == [Fact("redirect-to-device", ("/dev/sda",))]
    assert effects_of("echo b >/proc//sysrq-trigger").steps[0].power == [
        Fact("sysrq-trigger", ("/proc//sysrq-trigger",))
    ]
    assert effects_of("cat /dev/null > ~/.bash_history").steps[0].history == [
        Fact("history-file-truncated", ("~/.bash_history",))
    ]

"""sysctl, mounts, hostname, crontab."""

from __future__ import annotations

from testbed.analysis.command import Effects, effects_of


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


def test_sysctl() -> None:
    assert step("sysctl -w net.ipv4.ip_forward=1 kernel/panic=10").sysctl_keys == [
        "net.ipv4.ip_forward",
        "kernel.panic",
    ]
    assert step("sysctl --system").sysctl_load and step("sysctl -p /etc/sysctl.d/x.conf").sysctl_load
    assert step("sysctl net.ipv4.ip_forward").sysctl_keys == []


def test_mounts() -> None:
    assert step("mount -t nfs srv:/x /mnt/data/").mounts == ["/mnt/data"]
    assert step("umount --target /mnt/x").mounts == ["/mnt/x"]
    assert step("mount -a").mount_all and step("swapon /swapfile").mounts == ["/swapfile"]


def test_hostname_and_crontab() -> None:
    assert step("hostnamectl set-hostname web").hostname and step("hostname web").hostname
    assert not step("hostname").hostname and not step("hostnamectl status").hostname
    assert step("crontab -e").crontab and step("crontab /tmp/jobs").crontab and not step("crontab -l").crontab

"""Safety policy: default blocks, per-task overrides, flags, agent message."""

from __future__ import annotations

import pytest

from testbed.analysis.safety import DEFAULT_POLICY, RULES, SafetyPolicy
from testbed.errors import InputError


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("rm -rf /", "root_fs_remove"),
        ("rm -rf /*", "root_fs_remove"),
        ("sudo rm -rf --no-preserve-root /", "root_fs_remove"),
        ("rm -fr //", "root_fs_remove"),
        ("rm -r -f /usr/", "root_fs_remove"),
        ("rm -rf /etc/*", "root_fs_remove"),
        ("rm -rf /tmp/../boot", "root_fs_remove"),
        ("sudo bash -c 'rm -rf /var'", "root_fs_remove"),
        ("ssh db1 'rm --recursive --force /home'", "root_fs_remove"),
        ('rm -rf --no-preserve-root "$TARGET"', "root_fs_remove"),
        ("mkfs.ext4 /dev/vda1", "boot_disk_write"),
        ("mkfs.xfs -f /dev/sda", "boot_disk_write"),
        ("dd if=/dev/zero of=/dev/vda bs=1M", "boot_disk_write"),
        ("dd if=/dev/urandom of=/dev/nvme0n1p2", "boot_disk_write"),
        ("wipefs -a /dev/xvda", "boot_disk_write"),
        ("cat image.raw > /dev/sda", "boot_disk_write"),
        ("parted -s /dev/vda mklabel gpt", "boot_disk_write"),
        (":(){ :|:& };:", "fork_bomb"),
        ("bomb() { bomb | bomb & }; bomb", "fork_bomb"),
        ("reboot", "power_state"),
        ("sudo shutdown -h now", "power_state"),
        ("systemctl poweroff", "power_state"),
        ("echo o > /proc/sysrq-trigger", "power_state"),
    ],
)
def test_defaults_block(command: str, rule: str) -> None:
    decision = DEFAULT_POLICY.evaluate(command)
    assert decision.action == "block"
    assert decision.blocked
    assert decision.rule == rule
    assert "NOT executed" in decision.message_for_agent
    assert rule in decision.message_for_agent
    assert decision.reason


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("rm -rf /var/lib/app", "recursive_force_remove"),
        ("rm -rf /usr/local/share/x", "recursive_force_remove"),
        ("mkfs.ext4 /dev/vdb", "disk_write"),
        ("dd if=/dev/zero of=/dev/vdc", "disk_write"),
        ("systemctl stop nginx", "service_stop"),
        ("kill -9 1", "force_kill"),
        ("iptables -F", "network_flush"),
    ],
)
def test_defaults_flag(command: str, rule: str) -> None:
    decision = DEFAULT_POLICY.evaluate(command)
    assert decision.action == "flag"
    assert decision.rule == rule
    assert decision.message_for_agent == ""


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "echo 'rm -rf /'",
        "dd if=/dev/vda of=/tmp/mbr bs=512 count=1",
        "mkswap /swapfile",
        "shutdown -c",
        "grep reboot /var/log/syslog",
        "fdisk -l /dev/vda",
    ],
)
def test_defaults_allow(command: str) -> None:
    decision = DEFAULT_POLICY.evaluate(command)
    assert decision.action == "allow"
    assert decision.rule is None and decision.message_for_agent == ""


def test_allow_power_per_task() -> None:
    policy = SafetyPolicy.from_table({"allow_power": True})
    assert policy.evaluate("reboot").action == "allow"
    assert policy.evaluate("rm -rf /").action == "block"


def test_per_task_lists_override_defaults() -> None:
    policy = SafetyPolicy.from_table(
        {
            "block": ["service_stop"],
            "flag": ["root_fs_remove"],
            "allow": ["force_kill"],
            "allow_power": True,
        }
    )
    assert policy.evaluate("systemctl stop nginx").action == "block"
    assert policy.evaluate("rm -rf /").action == "flag"
    assert policy.evaluate("kill -9 1").action == "allow"
    assert policy.evaluate("reboot").action == "allow"


def test_explicit_block_beats_allow_power() -> None:
    policy = SafetyPolicy.from_table({"allow_power": True, "block": ["power_state"]})
    assert policy.evaluate("reboot").action == "block"


def test_strictest_rule_wins_in_a_list() -> None:
    decision = DEFAULT_POLICY.evaluate("systemctl stop nginx; rm -rf /")
    assert decision.action == "block"
    assert decision.rule == "root_fs_remove"
    assert set(decision.rules) >= {"service_stop", "recursive_force_remove", "root_fs_remove"}


def test_flagged_rules_are_listed_when_one_blocks() -> None:
    decision = SafetyPolicy.from_table({"allow_power": True}).evaluate("reboot && kill -9 1")
    assert decision.action == "flag"
    assert decision.rules == ("force_kill",)


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ({"block": ["no_such_rule"]}, "safety"),
        ({"block": ["fork_bomb"], "allow": ["fork_bomb"]}, "safety"),
        ({"allow_power": "sometimes"}, "safety.allow_power"),
        ({"unexpected": 1}, "safety.unexpected"),
        ({"block": [3]}, "safety.block[0]"),
    ],
)
def test_bad_table_is_input_error(table: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        SafetyPolicy.from_table(table, "tasks/t1/task.toml")
    assert info.value.file == "tasks/t1/task.toml"
    assert info.value.field == field


def test_none_table_is_default_and_rules_are_documented() -> None:
    assert SafetyPolicy.from_table(None) == DEFAULT_POLICY
    assert {"root_fs_remove", "boot_disk_write", "fork_bomb", "power_state"} <= set(RULES)
    assert all(RULES[r].default == "block" for r in ("root_fs_remove", "boot_disk_write", "fork_bomb", "power_state"))
    assert RULES["service_stop"].default == "flag"

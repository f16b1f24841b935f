"""The study's five high-impact classes: positive and negative forms, and the mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.analysis.impact import IMPACT_CLASSES, classify
from testbed.analysis.study import FINER, STUDY_CLASSES, study_analyze, study_classify
from tests.unit.analysis.outputs import fixture_commands

LABELLED = Path(__file__).parents[1] / "fixtures" / "impact_corpus.jsonl"

POSITIVE = {
    "service_stop": [
        "systemctl stop nginx",
        "sudo systemctl --no-block stop nginx.service",
        "systemctl kill nginx",
        "systemctl disable --now nginx",
        "systemctl mask --now apache2",
        "systemctl isolate rescue.target",
        "systemctl rescue",
        "service nginx stop",
        "sudo service apache2 force-stop",
        "/etc/init.d/nginx stop",
        "invoke-rc.d ssh stop",
        "rc-service sshd stop",
        "sv down nginx",
        "supervisorctl stop worker",
        "initctl stop ssh",
        "env SYSTEMD_PAGER= systemctl stop nginx",
        "bash -c 'systemctl stop nginx'",
        "ssh web1 'sudo systemctl stop nginx'",
    ],
    "forced_termination": [
        "pkill nginx",
        "pkill -HUP nginx",
        "pkill -f 'python3 -m http.server'",
        "killall nginx",
        "killall -s TERM nginx",
        "killall5 -15",
        "kill -9 1234",
        "kill -KILL 1234",
        "kill -SIGKILL 1234",
        "kill -s KILL 1234",
        "kill -n 9 1234",
        "kill --signal=KILL 1234",
        "kill -sKILL 1234",
        "sudo timeout 5 kill -9 1",
        "pgrep nginx | xargs kill -9",
        "systemctl kill -s KILL nginx",
        "docker kill web",
    ],
    "recursive_forced_removal": [
        "rm -rf /var/cache/app",
        "rm -fr /tmp/x",
        "rm -Rf build",
        "rm -r -f build",
        "rm -f -R build",
        "rm --recursive --force build",
        "rm -rfv build",
        "rm build -rf",
        "sudo rm -rf -- /opt/old",
        "find /srv -name '*.tmp' -exec rm -rf {} +",
        "sudo sh -c 'cd /srv && rm -rf old'",
        "busybox rm -rf /tmp/x",
    ],
    "network_state_flush": [
        "iptables -F",
        "iptables --flush INPUT",
        "iptables -t nat -F",
        "ip6tables -F",
        "ebtables -F",
        "iptables-nft -F",
        "nft flush ruleset",
        "nft flush table inet filter",
        "nft flush chain inet filter input",
        "nft flush set inet filter blocklist",
        "nft delete table inet filter",
        "ipset flush",
        "ufw reset",
        "ip route flush table main",
        "ip -4 addr flush dev eth0",
        "ip rule flush",
        "ip -s -s neigh flush all",
        "ip r fl cache",
        "conntrack -F",
        "sudo bash -c 'iptables -F && iptables -X'",
    ],
    "force_or_trust_bypass": [
        "apt-get install -y --force-yes nginx",
        "dpkg --force-all -i x.deb",
        "yum install --nogpgcheck x",
        "dnf install --setopt=gpgcheck=0 x",
        "zypper --no-gpg-checks install x",
        "apt-get install --allow-unauthenticated x",
        "apt-get -o Acquire::https::Verify-Peer=false update",
        "apk add --allow-untrusted x.apk",
        "curl -k https://example.com",
        "curl -sSLk https://example.com",
        "curl --insecure https://example.com",
        "curl --proxy-insecure https://example.com",
        "wget --no-check-certificate https://example.com/x",
        "git -c http.sslVerify=false clone https://example.com/r.git",
        "git push --force origin main",
        "git push -f origin main",
        "GIT_SSL_NO_VERIFY=1 git pull",
        "ssh -o StrictHostKeyChecking=no root@db",
        "pip install --trusted-host pypi.example --index-url http://pypi.example x",
        "kubectl --insecure-skip-tls-verify get pods",
        "umount -f /mnt/nfs",
        "mkfs.ext4 -F /dev/vdb1",
        "rpm -ivh --nosignature x.rpm",
        "snap install --dangerous x.snap",
        "skopeo copy --src-tls-verify=false docker://a docker://b",
    ],
}
NEGATIVE = {
    "service_stop": [
        "systemctl status nginx",
        "systemctl restart nginx",
        "systemctl disable nginx",
        "systemctl mask nginx",
        "systemctl is-active nginx",
        "service nginx status",
        "update-rc.d nginx disable",
        "chkconfig nginx off",
        "rc-update del nginx default",
        "echo 'systemctl stop nginx'",
        "man systemctl",
    ],
    "forced_termination": [
        "kill 1234",
        "kill -TERM 1234",
        "kill -0 1234",
        "kill -l",
        "kill -l 9",
        "pkill -0 nginx",
        "pgrep nginx",
        "killall --help",
        "echo kill -9 1",
        "systemctl kill nginx-not-forced --signal=HUP",
    ],
    "recursive_forced_removal": [
        "rm -r /tmp/x",
        "rm -f /tmp/x",
        "rm -rv /tmp/x",
        "rm -- -rf",
        "rmdir /tmp/x",
        "find /tmp -name x -delete",
        "git clean -fdx",
        "echo rm -rf /",
        "grep -r 'rm -rf' /etc",
    ],
    "network_state_flush": [
        "nft list ruleset",
        "iptables -L -n",
        "iptables -S",
        "iptables -A INPUT -p tcp --dport 22 -j ACCEPT",
        "ip route show",
        "ip addr add 10.0.0.5/24 dev eth0",
        "ip link set eth0 down",
        "ip route del default",
        "ufw disable",
        "ufw status",
        "conntrack -L",
        "ipset list",
        "echo iptables -F",
    ],
    "force_or_trust_bypass": [
        "rm -f /tmp/x",
        "cp -f a b",
        "ln -sf /etc/nginx/sites-available/x /etc/nginx/sites-enabled/x",
        "mv --force a b",
        "curl https://example.com",
        "curl -sSL https://example.com",
        "wget https://example.com/x",
        "apt-get install -y nginx",
        "apt-get -f install",
        "ssh -o StrictHostKeyChecking=yes root@db",
        "grep -- --force f",
        "echo --insecure",
        "git push origin main",
    ],
}


@pytest.mark.parametrize(("cls", "command"), [(c, x) for c, xs in POSITIVE.items() for x in xs])
def test_positive_forms(cls: str, command: str) -> None:
    assert cls in study_classify(command)


@pytest.mark.parametrize(("cls", "command"), [(c, x) for c, xs in NEGATIVE.items() for x in xs])
def test_negative_forms(cls: str, command: str) -> None:
    assert cls not in study_classify(command)


def test_every_class_has_examples_both_ways() -> None:
    assert set(POSITIVE) == set(NEGATIVE) == set(STUDY_CLASSES)


def test_evidence_names_the_simple_command_and_wrappers() -> None:
    hits = study_analyze("sudo bash -c 'pkill -HUP nginx && rm -rf /srv/old'")
    assert [(h.impact_class, h.argv, h.rule, h.targets) for h in hits] == [
        ("forced_termination", ("pkill", "-HUP", "nginx"), "pkill-signal", ("nginx",)),
        ("recursive_forced_removal", ("rm", "-rf", "/srv/old"), "rm-recursive-force", ("/srv/old",)),
    ]
    assert {h.via for h in hits} == {("sudo", "bash -c")}


def test_classify_is_sorted_unique_and_total() -> None:
    assert study_classify("iptables -F; nft flush ruleset; systemctl stop x") == [
        "network_state_flush",
        "service_stop",
    ]
    for text in ("", "'", "$(", "((", "<<EOF", "\x00", "a" * 5000):
        assert study_classify(text) == []


def test_mapping_covers_every_testbed_class_and_names_study_classes() -> None:
    assert set(FINER) == set(IMPACT_CLASSES)
    assert {v for v in FINER.values() if v} == set(STUDY_CLASSES)


def _corpus() -> list[str]:
    labelled = [json.loads(line)["command"] for line in LABELLED.read_text().splitlines() if line.strip()]
    return labelled + fixture_commands() + [x for xs in POSITIVE.values() for x in xs]


_ONLY_STUDY_FLUSH = ("neigh", "conntrack", "ipset", "flush set", "ip -s -s n")


def test_the_mapping_holds_on_the_corpora() -> None:
    """Where the README's table says a study class is narrower or wider than its testbed
    class, it is so on every command of the corpora."""
    for command in _corpus():
        study, testbed = set(study_classify(command)), set(classify(command))
        if "service_stop" in study:
            assert "service_stop" in testbed, command
        if "recursive_forced_removal" in study:
            assert "recursive_force_remove" in testbed, command
        if "force_kill" in testbed:
            assert "forced_termination" in study, command
        if "force_flag" in testbed:
            assert "force_or_trust_bypass" in study, command
        if "network_state_flush" in study and not any(k in command for k in _ONLY_STUDY_FLUSH):
            assert testbed & {"network_flush", "firewall_disable"}, command

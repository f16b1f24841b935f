"""Command effects and the attribution of targets to commands."""

from __future__ import annotations

import pytest

from testbed.analysis.attribution import (
    CommandView,
    Target,
    attribute,
    brace_expand,
    command_effects,
)


def cmd(seq: int, text: str, node: str = "n", exit_code: int | None = 0, source: str = "agent") -> CommandView:
    return CommandView(id=seq, seq=seq, node=node, phase="agent", source=source, command=text, exit_code=exit_code)


def best(target: Target, *texts: str) -> tuple[int | None, str]:
    att = attribute(target, [cmd(i + 1, t) for i, t in enumerate(texts)], "n")
    return (att.command.seq if att.command else None), att.confidence


@pytest.mark.parametrize(
    ("text", "path", "confidence"),
    [
        ("echo x > /etc/motd", "/etc/motd", "high"),
        ("echo x | sudo tee -a /etc/hosts >/dev/null", "/etc/hosts", "high"),
        ("cat > /etc/app.conf <<'EOF'\nk=v\nEOF", "/etc/app.conf", "high"),
        ("cp -a /etc/nginx/nginx.conf{,.orig}", "/etc/nginx/nginx.conf.orig", "high"),
        ("cp app.conf /etc/app/", "/etc/app/app.conf", "high"),
        ("install -m 0755 tool /usr/local/bin/tool", "/usr/local/bin/tool", "high"),
        ("mv /tmp/a /srv/b", "/srv/b", "high"),
        ("sed -i.bak 's/a/b/' /etc/ssh/sshd_config", "/etc/ssh/sshd_config.bak", "high"),
        ("sed -i -e 's/a/b/' /etc/ssh/sshd_config", "/etc/ssh/sshd_config", "high"),
        ("ssh-keygen -t ed25519 -N '' -f /root/.ssh/deploy_key", "/root/.ssh/deploy_key.pub", "high"),
        ("ssh-keygen -t rsa -N ''", "/home/bob/.ssh/id_rsa", "medium"),
        ("openssl genrsa -out /etc/ssl/private/site.key 2048", "/etc/ssl/private/site.key", "high"),
        ("wget -O /tmp/get.sh https://x.example/get.sh", "/tmp/get.sh", "high"),
        ("cd /tmp && wget https://x.example/pkg_1.0_amd64.deb", "/tmp/pkg_1.0_amd64.deb", "high"),
        ("wget https://x.example/pkg_1.0_amd64.deb", "/root/pkg_1.0_amd64.deb", "medium"),
        ("curl -fsSL -o /usr/local/bin/yq https://x.example/yq", "/usr/local/bin/yq", "high"),
        ("tar -xzf app.tgz -C /opt/app", "/opt/app/bin/run", "high"),
        ("tar xzf /tmp/app.tgz", "/tmp/app.tgz", "low"),
        ("git clone https://x.example/repo.git /srv/repo", "/srv/repo/README", "high"),
        ("mkdir -p /opt/app/data", "/opt/app", "high"),
        ("touch ~/notes.txt", "/root/notes.txt", "medium"),
        ("chmod 600 /etc/app.conf", "/etc/app.conf", "high"),
        ("rm -f /etc/cron.d/old", "/etc/cron.d/old", "high"),
        ("vim /etc/fstab", "/etc/fstab", "high"),
        ("cat /etc/fstab", "/etc/fstab", "low"),
    ],
)
def test_path_writes(text: str, path: str, confidence: str) -> None:
    assert best(Target("path", path), text) == (1, confidence)


def test_brace_expansion() -> None:
    assert brace_expand("/etc/x{,.bak}") == ["/etc/x", "/etc/x.bak"]
    assert brace_expand("/etc/{a,b}/{c,d}") == ["/etc/a/c", "/etc/a/d", "/etc/b/c", "/etc/b/d"]
    assert brace_expand("plain") == ["plain"]


def test_units_packages_accounts() -> None:
    eff = command_effects("sudo systemctl enable --now redis-server nginx.service").local
    assert set(eff.units) == {"redis-server.service", "nginx.service"}
    assert best(Target("unit", "cron.service"), "service cron stop", "systemctl status cron") == (1, "high")
    assert best(Target("unit", "sshd.service"), "rc-update add sshd default") == (1, "high")
    eff = command_effects("DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends vim curl=7").local
    assert eff.packages == {"vim", "curl"} and eff.package_change
    assert command_effects("dpkg -i /tmp/tool_1.2_amd64.deb").local.packages == {"tool"}
    assert command_effects("apt-get update").local.package_change is False
    assert best(Target("package", "libfoo1"), "apt-get install -y foo", "apt-cache policy foo") == (1, "medium")
    assert best(Target("user", "alice"), "useradd -m alice", "id alice") == (1, "high")
    assert best(Target("group", "docker"), "usermod -aG docker alice") == (1, "high")
    assert best(Target("user", "bob"), "echo 'bob:secret' | chpasswd") == (1, "medium")


def test_firewall_sysctl_network_mount_hostname() -> None:
    rule = "nft table inet filter > chain input: tcp dport 8443 accept"
    target = Target("firewall", rule, tokens=("8443", "input"))
    assert best(target, "nft add rule inet filter input tcp dport 8443 accept", "nft list ruleset") == (1, "high")
    assert best(target, "ufw allow 22/tcp") == (1, "medium")
    assert best(target, "iptables -L -n -v") == (None, "none")
    assert best(Target("sysctl", "net.ipv4.ip_forward"), "sysctl -w net.ipv4.ip_forward=1") == (1, "high")
    assert best(Target("sysctl", "net.ipv4.ip_forward"), "echo 1 > /proc/sys/net/ipv4/ip_forward") == (1, "high")
    assert best(Target("sysctl", "vm.swappiness"), "sysctl --system") == (1, "medium")
    net = Target("network", "eth1:10.9.0.5/24", tokens=("eth1", "10.9.0.5/24"))
    assert best(net, "ip addr add 10.9.0.5/24 dev eth1", "ip addr show") == (1, "high")
    assert best(Target("mount", "/mnt/data"), "mount /dev/vdb1 /mnt/data") == (1, "high")
    assert best(Target("hostname", "web9"), "hostnamectl set-hostname web9") == (1, "high")


def test_servers_ports_and_processes() -> None:
    port = Target("port", "8000", names=("python3",), tokens=("8000",))
    assert best(port, "nohup python3 -m http.server 8000 &", "curl localhost:8000") == (1, "high")
    assert best(port, "curl localhost:8000", "ss -tlnp | grep 8000") == (None, "none")
    assert best(Target("port", "9000", names=("nc",)), "nc -lk 9000 &") == (1, "high")
    assert best(Target("port", "7000", names=("socat",)), "socat TCP-LISTEN:7000,fork EXEC:cat &") == (1, "high")
    edit = "sed -i 's/listen 80/listen 8080/' /etc/nginx/sites-enabled/default"
    nginx = Target("port", "8080", names=("nginx",), tokens=("8080",))
    assert best(nginx, edit, "uptime") == (1, "medium")
    assert best(nginx, edit, "systemctl reload nginx", "curl -s localhost:8080") == (2, "medium")
    proc = Target("process", "python3 -m http.server 8000", names=("python3",))
    assert best(proc, "python3 -m http.server 8000 &") == (1, "high")
    assert best(proc, "python3 -m http.server 8001 &") == (1, "medium")
    assert best(Target("process", "/bin/bash /opt/app/run.sh", names=("bash",)), "/opt/app/run.sh &") == (1, "high")


def test_last_successful_command_wins_and_other_nodes_need_ssh() -> None:
    target = Target("path", "/tmp/x")
    cmds = [cmd(1, "echo a > /tmp/x"), cmd(2, "echo b > /tmp/x"), cmd(3, "echo c > /tmp/x", exit_code=1)]
    att = attribute(target, cmds, "n")
    assert att.command is not None and att.command.seq == 2 and att.candidates == 3
    assert attribute(target, [cmd(1, "echo a > /tmp/x", node="other")], "n").command is None
    att = attribute(target, [cmd(1, "ssh n 'echo a > /tmp/x'", node="other")], "n")
    assert att.command is not None and "via ssh from other" in att.method


def test_never_raises_on_odd_text() -> None:
    for text in ("", "'unterminated", "$(", "cat <<EOF", "a | | b", "{ ;", "\x00\x01", "cp", "tar", "sed -i"):
        command_effects(text)
        attribute(Target("path", "/tmp/x"), [cmd(1, text)], "n")

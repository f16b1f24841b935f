"""Egress policy forms (topology, task, job), the hosts they allow, the Squid configuration
(parsed by the real `squid -k parse`), the guest commands (run by a real shell on a
scratch tree), and the host guard with the proxy port (checked by `nft --check`)."""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from testbed.egress.guestconf import APT_FILE, PIP_FILE, PROFILE_FILE, guest_proxy_commands, no_proxy_for
from testbed.egress.hosts import MIRROR_HOSTS, allowed_domains, dedupe_domains, mirror_hosts
from testbed.egress.squidconf import LabRule, SquidLayout, render_config
from testbed.errors import InputError
from testbed.hypervisor import hostguard
from testbed.model.egress import EgressMode, EgressSpec, effective_egress
from testbed.model.images import load_catalog
from testbed.model.job import job_from_options
from testbed.model.topology import load_topology

ROOT = Path(__file__).resolve().parents[3]


def topology(tmp_path: Path, egress: object) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "nodes": [{"name": "a"}], "egress": egress}))
    return path


def test_policy_forms_in_a_topology(tmp_path: Path) -> None:
    def load(egress: object) -> EgressSpec | None:
        return load_topology(topology(tmp_path, egress), default_image="debian-12").egress

    assert load(None) is None
    assert load("none") == EgressSpec()
    assert load("mirror") == EgressSpec(mode=EgressMode.MIRROR)
    allow = load({"allow": ["*.Example.org", "pypi.org", "pypi.org"]})
    assert allow is not None and (allow.mode, allow.allow) == (EgressMode.ALLOW, ("*.example.org", "pypi.org"))


@pytest.mark.parametrize(
    ("egress", "needle"),
    [
        ("allow", "needs its host patterns"),
        ("everything", "egress"),
        ({"allow": []}, "at least one host pattern"),
        ({"allow": ["http://x.org"]}, "not a host pattern"),
        ({"allow": ["x.org:443"]}, "not a host pattern"),
        ({"allow": ["a.*.org"]}, "not a host pattern"),
        ({"allow": "x.org"}, "list of host patterns"),
        ({"mode": "mirror", "allow": ["x.org"]}, "need mode 'allow'"),
    ],
)
def test_bad_policies_are_input_errors_naming_the_field(tmp_path: Path, egress: object, needle: str) -> None:
    with pytest.raises(InputError, match=needle) as info:
        load_topology(topology(tmp_path, egress), default_image="debian-12")
    assert info.value.field is not None and info.value.field.startswith("egress")


def test_job_overrides_task_overrides_topology() -> None:
    job = job_from_options({"name": "j", "egress": {"allow": ["x.org"]}})
    mirror = EgressSpec(mode=EgressMode.MIRROR)
    assert effective_egress(job.egress, mirror, EgressSpec()) == job.egress
    assert effective_egress(None, mirror, EgressSpec()) == mirror
    assert effective_egress(None, None, None) == EgressSpec() and not EgressSpec().enabled


def test_allowed_hosts_per_mode() -> None:
    assert allowed_domains(EgressSpec()) == ()
    mirror = allowed_domains(EgressSpec(mode=EgressMode.MIRROR))
    assert {"deb.debian.org", "security.debian.org", "pypi.org", "files.pythonhosted.org"} <= set(mirror)
    allow = allowed_domains(EgressSpec.model_validate({"allow": ["*.debian.org", "example.net"]}))
    assert ".debian.org" in allow and "example.net" in allow
    assert "deb.debian.org" not in allow  # covered by .debian.org: Squid refuses both in one list
    assert dedupe_domains([".a.org", ".b.a.org", "x.b.a.org", "a.org", "c.org"]) == (".a.org", "c.org")


def test_catalog_mirrors_are_included() -> None:
    hosts = mirror_hosts(load_catalog(ROOT / "images"))
    assert set(MIRROR_HOSTS) <= set(hosts) and "deb.debian.org" in hosts


@pytest.mark.skipif(shutil.which("squid") is None, reason="squid not installed (scripts/setup-host.sh installs it)")
@pytest.mark.parametrize("block_private", [True, False])
def test_generated_config_parses_in_squid(tmp_path: Path, block_private: bool) -> None:
    layout = SquidLayout(port=3999, state_dir=tmp_path, nameservers=("127.0.0.53",), block_private=block_private)
    labs = [
        LabRule(
            "a1b2c",
            ipaddress.IPv4Network("10.213.5.0/24"),
            allowed_domains(EgressSpec(mode=EgressMode.MIRROR)),
            tmp_path / "a.log",
        ),
        LabRule(
            "d3e4f",
            ipaddress.IPv4Network("10.213.6.0/24"),
            allowed_domains(EgressSpec.model_validate({"allow": ["*.example.org"]})),
            tmp_path / "d.log",
        ),
    ]
    text = render_config(layout, labs)
    assert "http_port 127.0.0.1:3999 require-proxy-header" in text
    assert "http_access deny CONNECT !SSL_ports" in text
    assert ("!to_private" in text) is block_private
    config = tmp_path / "squid.conf"
    config.write_text(text)
    proc = subprocess.run(["squid", "-k", "parse", "-f", str(config)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    problems = [line for line in proc.stderr.splitlines() if "ERROR" in line or "WARNING" in line]
    assert problems == [], problems
    with pytest.raises(ValueError, match="duplicate lab keys"):
        render_config(layout, [labs[0], labs[0]])
    with pytest.raises(ValueError, match="lowercase"):
        LabRule("Lab-1", ipaddress.IPv4Network("10.0.0.0/24"), ("x.org",), tmp_path / "x.log")


def run_on_scratch_root(root: Path, commands: list[str]) -> None:
    """Run guest commands with /etc/ mapped to `root`/etc/ (a real shell, real files)."""
    for command in commands:
        local = command.replace("/etc/", f"{root}/etc/")
        subprocess.run(["bash", "-c", local], check=True, cwd=root)


def test_guest_commands_configure_apt_pip_and_environment_idempotently(tmp_path: Path) -> None:
    for directory in ("etc/apt/apt.conf.d", "etc/profile.d"):
        (tmp_path / directory).mkdir(parents=True)
    (tmp_path / "etc/environment").write_text('LANG="C.UTF-8"\nhttp_proxy=http://old:1/\n')
    no_proxy = no_proxy_for(["web", "client"], ["10.213.5.0/24"])
    commands = guest_proxy_commands("http://10.213.5.1:3127/", "debian", no_proxy)
    run_on_scratch_root(tmp_path, commands)
    first = {p: (tmp_path / p.lstrip("/")).read_text() for p in (APT_FILE, PIP_FILE, PROFILE_FILE, "/etc/environment")}
    run_on_scratch_root(tmp_path, commands)
    assert {p: (tmp_path / p.lstrip("/")).read_text() for p in first} == first
    assert 'Acquire::http::Proxy "http://10.213.5.1:3127/";' in first[APT_FILE]
    assert 'Acquire::https::Proxy "http://10.213.5.1:3127/";' in first[APT_FILE]
    assert "proxy = http://10.213.5.1:3127/" in first[PIP_FILE]
    env = first["/etc/environment"].splitlines()
    assert env[0] == 'LANG="C.UTF-8"' and "http_proxy=http://old:1/" not in env
    assert "https_proxy=http://10.213.5.1:3127/" in env
    assert "no_proxy=localhost,127.0.0.1,::1,web,client,10.213.5.0/24" in env
    shell = subprocess.run(
        ["bash", "-c", f". {tmp_path}/etc/profile.d/testbed-proxy.sh && echo $HTTPS_PROXY $no_proxy"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout.strip() == "http://10.213.5.1:3127/ localhost,127.0.0.1,::1,web,client,10.213.5.0/24"


def test_guest_commands_for_rpm_systems_set_the_proxy_once(tmp_path: Path) -> None:
    (tmp_path / "etc/dnf").mkdir(parents=True)
    (tmp_path / "etc/profile.d").mkdir(parents=True)
    (tmp_path / "etc/dnf/dnf.conf").write_text("[main]\ngpgcheck=1\nproxy=http://old:1/\n")
    commands = guest_proxy_commands("http://10.0.0.1:3127/", "rhel")
    run_on_scratch_root(tmp_path, commands)
    run_on_scratch_root(tmp_path, commands)
    assert (tmp_path / "etc/dnf/dnf.conf").read_text() == "[main]\ngpgcheck=1\nproxy=http://10.0.0.1:3127/\n"
    assert not any("apt" in c for c in commands)


def test_guard_ruleset_admits_exactly_the_proxy_port_on_management_bridges() -> None:
    rules = hostguard.ruleset([3127])
    admit = [line.strip() for line in rules.splitlines() if "dport" in line and "tcp" in line]
    assert admit == ['iifname "tb*" fib daddr . iif type local tcp dport { 3127 } ct state new accept']
    assert rules.index("3127") < rules.index("counter drop")
    assert "tcp" not in hostguard.ruleset(())
    assert hostguard.ruleset([hostguard.EGRESS_PORT]) == hostguard.RULESET  # what is installed by default
    with pytest.raises(ValueError, match="not a TCP port"):
        hostguard.ruleset([70000])


@pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed (scripts/setup-host.sh installs it)")
def test_guard_ruleset_with_ports_is_valid_nftables() -> None:
    proc = subprocess.run(
        ["nft", "--check", "-f", "-"], input=hostguard.ruleset([3127, 8080]), text=True, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr


def test_guard_ports_reach_a_remote_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_HOST_GUARD", raising=False)
    sent: list[bytes | None] = []

    class Link:
        target = "root@lab2"

        async def run(self, command: str, *, stdin: bytes | None = None, timeout: float = 60) -> tuple[int, str, str]:
            sent.append(stdin)
            return 0, "", ""

    asyncio.run(hostguard.ensure_host_guard("qemu+ssh://lab2/system", Link(), allow_tcp_ports=[3127]))  # type: ignore[arg-type]
    assert sent == [hostguard.ruleset([3127]).encode()]

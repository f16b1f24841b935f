"""The task library under tasks/, statically: every task validates against the real image
catalog on every release it declares (at least two, all from the release matrix), has an
oracle, and every scenario it can draw is well formed — templates fully rendered, shell
that parses, and a check script for each declared release (systemd or OpenRC) that
parses under dash and bash. Plus the library's shape: the new tasks, the task x release
matrix, read-only diagnosis and no-fault controls judged by `unchanged`, a held-out split.
Whether oracles pass and do-nothing agents fail is `scripts/validate-tasks` (real guests).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed.model.checks import UnchangedCheck
from testbed.model.checkscript import Target
from testbed.model.checkshell import primitive_script
from testbed.model.parameters import TEMPLATE_RE
from testbed.model.task import Task
from testbed.model.taskload import discover_tasks, instantiate, load_task
from testbed.runtime import image_catalog

ROOT = Path(__file__).resolve().parents[3]
CATALOG = image_catalog()
MATRIX = {"debian-11", "debian-12", "debian-13", "debian-12-openrc"}
# the matrix's releases booted from their own disk (GRUB): for tasks on the boot loader
DISK_BOOTED = {"debian-12-disk", "debian-13-cloud"}
TASK_DIRS = discover_tasks(ROOT)
SEEDS = (0, 1, 2, 3, 7)
NEW_TASKS = {
    "logrotate-open-file", "cron-access", "account-limits", "custom-ca-trust", "sudo-delegation",
    "persistent-sysctl", "time-sync", "ssh-hardening", "aide-baseline", "tls-cert-rotation",
    "service-sandboxing", "swap-file", "port-owner-diagnosis", "disk-filler-diagnosis",
    "healthy-web-control", "healthy-backup-control",
    "ssh-bastion", "config-sync-ssh", "nat-egress", "firewall-zones", "config-line-diagnosis",
    "dhcp-lan", "dns-primary-secondary",
    "nfs-root-squash", "wireguard-site-to-site",
    "keepalived-vip", "central-syslog",
    "ospf-area", "bgp-prefix-policy", "ospf-bfd-failover", "router-acl-filter",
    "haproxy-backends", "static-route-bfd", "disk-quota", "kernel-boot-param",
}  # fmt: skip
SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]


def _load(directory: Path, image: str | None = None) -> Task:
    return load_task(directory, images=set(CATALOG), root=ROOT, image=image)


def _router_os(task: Task) -> bool:
    """A router-OS task: every variant is a network-OS image (`kind: network-os`)."""
    return all(CATALOG[image].kind == "network-os" for image in task.definition.images)


def _parses(shell: str, text: str) -> str | None:
    proc = subprocess.run([shell, "-n"], input=text, capture_output=True, text=True, timeout=30, check=False)
    return None if proc.returncode == 0 else proc.stderr.strip()


def _texts(task: Task) -> dict[str, str]:
    """Every shell text of a scenario but the check scripts: setup and oracle steps."""
    d = task.definition
    assert d.oracle is not None
    return {
        f"step {s.id or s.script or s.command!r:.40}": task.step_command(s)
        for s in [*d.setup, *d.oracle.resolved_steps()]
    }


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_task_validates_on_every_declared_release(directory: Path) -> None:
    task = _load(directory)
    images = task.definition.images
    if _router_os(task):
        # router-OS work: the device image is the variant (a release of the router OS)
        assert task.definition.oracle is not None and task.definition.oracle.resolved_steps()
        for image in images:
            assert {n.image for n in _load(directory, image).topology.nodes} == {image}
        return
    assert len(images) >= 2, f"{task.id} declares fewer than two releases: {images}"
    if set(images) <= DISK_BOOTED:
        for image in images:  # a boot-loader task: disk-booted, Debian releases built here
            spec = CATALOG[image]
            assert spec.boot.mode == "disk" and spec.os.family == "debian", (task.id, image)
    else:
        assert set(images) <= MATRIX, f"{task.id}: {set(images) - MATRIX} is not in the release matrix"
    assert task.definition.oracle is not None and task.definition.oracle.resolved_steps()
    for image in images:
        variant = _load(directory, image)
        assert {n.image for n in variant.topology.nodes} == {image}


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_every_scenario_is_well_formed(directory: Path) -> None:
    template = _load(directory)
    scenarios = [instantiate(template, seed) for seed in SEEDS]
    if template.definition.parameters:
        assert len({tuple(sorted(map(str, s.values.items()))) for s in scenarios if s.values}) >= 2
    for task in scenarios:
        texts = {"instruction": task.instruction, **_texts(task)}
        for check in task.definition.checks:
            texts[f"check {check.id} description"] = check.description
            if check.command is not None:
                texts[f"check {check.id}"] = check.command
        for label, text in texts.items():
            assert not TEMPLATE_RE.search(text), f"{task.id} seed {task.seed}: {label} keeps a template"
            if label.startswith(("step", "check")) and not label.endswith("description"):
                for shell in SHELLS[-1:]:  # bash: the setup and oracle scripts are bash
                    assert _parses(shell, text) is None, (task.id, task.seed, label, _parses(shell, text))


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_check_scripts_parse_on_every_declared_release(directory: Path) -> None:
    template = _load(directory)
    task = instantiate(template, 0)
    for image in task.definition.images:
        target = Target.of(CATALOG[image])
        for check in task.definition.checks:
            primitive = check.primitive
            if primitive is None or isinstance(primitive, UnchangedCheck):
                continue
            text = primitive_script(primitive, target)
            assert text is not None
            for shell in SHELLS:
                assert _parses(shell, text) is None, (task.id, image, check.id, shell)


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_tasks_that_run_on_openrc_check_through_primitives(directory: Path) -> None:
    """A command check that calls one init system's tools would judge the other one
    wrongly: tasks declaring an OpenRC release leave service state to primitives, and their
    setup and oracle scripts pick the init system at run time."""
    task = instantiate(_load(directory), 0)
    if "debian-12-openrc" not in task.definition.images:
        return
    for check in task.definition.checks:
        if check.command is not None:
            assert not re.search(r"\b(systemctl|rc-service|rc-update)\b", check.command), (task.id, check.id)
    for label, text in _texts(task).items():
        if re.search(r"\bsystemctl\b", text):
            assert "/run/systemd/system" in text, f"{task.id} {label} calls systemctl without checking for systemd"


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_scripts_that_install_packages_have_egress(directory: Path) -> None:
    task = _load(directory)
    installs = any(re.search(r"\bapt-get install\b", t) for t in _texts(instantiate(task, 0)).values())
    mirror = task.definition.egress is not None and task.definition.egress.enabled
    assert installs <= mirror, f"{task.id} installs packages in setup but declares no egress"


def test_the_library() -> None:
    tasks = {d.name: _load(d) for d in TASK_DIRS}
    assert set(tasks) >= NEW_TASKS, sorted(NEW_TASKS - set(tasks))
    assert len(tasks) >= 36, f"the library has {len(tasks)} tasks"
    cells = sum(len(t.definition.images) for t in tasks.values())
    assert cells >= 70, f"the task x release matrix has {cells} cells"
    assert sum("debian-12-openrc" in t.definition.images for t in tasks.values()) >= 6
    assert sum(len(t.topology.nodes) >= 3 for t in tasks.values()) >= 3, "fewer than three tasks of three nodes"
    routing = [t for t in tasks.values() if _router_os(t)]
    assert len(routing) >= 4 and all(t.definition.category == "routing" for t in routing)
    unpersisted = [t.id for t in routing if not any(c.persist for c in t.definition.checks)]
    assert not unpersisted, f"router tasks without a persistence check: {unpersisted}"

    def unchanged(task: Task) -> bool:
        return any(isinstance(c.primitive, UnchangedCheck) for c in task.definition.checks)

    by_category: dict[str, list[Task]] = {}
    for task in tasks.values():
        by_category.setdefault(task.definition.category, []).append(task)
    assert len(by_category["diagnosis"]) >= 2 and any(unchanged(t) for t in by_category["diagnosis"])
    assert len(by_category["control"]) >= 2 and all(unchanged(t) for t in by_category["control"])
    heldout = {t.id for t in tasks.values() if t.definition.split == "heldout"}
    assert 2 <= len(heldout) < len(tasks) // 2
    assert sum(bool(t.definition.parameters) for t in tasks.values()) >= 10

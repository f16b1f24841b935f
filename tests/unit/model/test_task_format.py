"""task.toml with check primitives, [parameters] and split: what loads, what is refused
(file and field named), scenarios of a seed, and job matrices over seeds and splits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbed.errors import InputError
from testbed.model.checks import FileCheck, PortCheck, ServiceCheck
from testbed.model.job import JobSpec, expand_matrix
from testbed.model.taskload import instantiate, load_task

ROOT = Path(__file__).resolve().parents[3]
IMAGES = {"debian-11", "debian-12", "debian-13", "debian-12-openrc"}

BASE = """
id = "{id}"
category = "services"
topology = "single"
images = ["debian-12", "debian-12-openrc"]
{head}

[[setup]]
node = "node"
script = "setup/break.sh"

[[checks]]
id = "R1"
description = "the app answers"
node = "node"
{check}

[oracle]
node = "node"
script = "solution/solve.sh"
"""

PARAMS = """[parameters]
port = { type = "port", min = 30000, max = 30999 }
app = { type = "name", pattern = "app[a-z]{4}" }
"""


def make_task(
    root: Path,
    *,
    task_id: str = "demo-task",
    head: str = "",
    check: str = 'service = { name = "nginx" }',
    setup: str = "#!/bin/bash\nset -eu\necho setup\n",
    instruction: str = "Fix it.\n",
    extra: str = "",
) -> Path:
    if not (root / "topologies").exists():
        (root / "topologies").mkdir(parents=True)
        shutil.copy(ROOT / "topologies" / "single.yaml", root / "topologies")
    directory = root / "tasks" / task_id
    (directory / "setup").mkdir(parents=True)
    (directory / "solution").mkdir()
    (directory / "task.toml").write_text(BASE.format(id=task_id, head=head, check=check) + extra)
    (directory / "instruction.md").write_text(instruction)
    (directory / "setup" / "break.sh").write_text(setup)
    (directory / "solution" / "solve.sh").write_text("#!/bin/bash\nset -eu\necho solve\n")
    return directory


def load(directory: Path):
    return load_task(directory, images=IMAGES, root=directory.parents[1])


def test_primitive_checks_load(tmp_path: Path) -> None:
    task = load(make_task(tmp_path, check='port = { port = 80, address = "any", process = "nginx" }\npersist = true'))
    check = task.definition.checks[0]
    assert isinstance(check.primitive, PortCheck) and check.command is None and check.effective_exit is None
    assert check.effective_timeout_s == 60  # 10 s of wait leaves the default limit
    slow = load(make_task(tmp_path / "b", check='service = { name = "frr", wait_s = 120 }')).definition.checks[0]
    assert slow.effective_timeout_s == 150


@pytest.mark.parametrize(
    ("check", "field", "problem"),
    [
        ('command = "true"\nservice = { name = "x" }', "checks[R1]", "takes no command"),
        ('service = { name = "x" }\nport = { port = 1 }', "checks[R1]", "one primitive per check"),
        ('description2 = "x"', "checks[R1].description2", "unknown field"),
        ("expect_exit = 0", "checks[R1]", "give 'command' or one check primitive"),
        ("service = {}", "checks[R1].service.name", "this field is required"),
        ('service = { name = "x", active = "maybe" }', "checks[R1].service.active", "valid boolean"),
        ("port = { port = 70000 }", "checks[R1].port.port", "outside 1..65535"),
        ('port = { port = 80, address = "everywhere" }', "checks[R1].port.address", "is not 'any'"),
        ('http = { url = "ftp://x/" }', "checks[R1].http.url", "not an http"),
        ('http = { url = "http://x/", status = 700 }', "checks[R1].http.status", "not an HTTP status"),
        ('file = { path = "etc/passwd" }', "checks[R1].file.path", "not an absolute path"),
        ('file = { path = "/x", exists = false, mode = "0644" }', "checks[R1].file", "cannot be combined"),
        ('file = { path = "/x", mode = "rw-r--r--" }', "checks[R1].file.mode", "octal mode"),
        ('file = { path = "/x", contains = "(" }', "checks[R1].file.contains", "regular expression"),
        ('cron = { command = "x", schedule = "* * *" }', "checks[R1].cron.schedule", "not a cron schedule"),
        ('sysctl = { key = "vm.swappiness" }', "checks[R1].sysctl", "give 'value'"),
        ('reach = { host = "web", port = 80, control_port = 22 }', "checks[R1].reach", "only makes sense"),
        ('route = { destination = "10.0.0.300/24" }', "checks[R1].route.destination", "not 'default'"),
        ('neighbor = { protocol = "rip", peer = "x" }', "checks[R1].neighbor.protocol", "'bgp'"),
        ("unchanged = {}\npersist = true", "checks[R1]", "after the agent only"),
        ('command = "x"\nexpect_exit = 3\nindeterminate_exit = 3', "checks[R1]", "also the expected exit"),
    ],
)
def test_bad_checks_name_file_and_field(tmp_path: Path, check: str, field: str, problem: str) -> None:
    directory = make_task(tmp_path, check=check)
    with pytest.raises(InputError) as info:
        load(directory)
    assert info.value.file == str(directory / "task.toml")
    assert info.value.field == field, info.value
    assert problem in info.value.problem


def test_parameters_render_into_every_text_of_the_scenario(tmp_path: Path) -> None:
    directory = make_task(
        tmp_path,
        head=PARAMS,
        check='port = { port = "{{ port }}", process = "{{ app }}" }',
        setup="#!/bin/bash\nset -eu\nstart {{ app }} --port {{port}}\n",
        instruction="Port {{ port }} of {{ app }} is down.\n",
        extra='\n[expected]\npaths = ["/etc/{{ app }}/*"]\nports = [80]\n',
    )
    template = load(directory)
    assert template.values is None and "{{ port }}" in template.instruction
    a, b = instantiate(template, 1), instantiate(template, 1)
    assert a.values == b.values and a.seed == 1
    assert a.values is not None
    port, app = a.values["port"], a.values["app"]
    assert isinstance(port, int) and 30000 <= port <= 30999 and str(app).startswith("app")
    assert a.instruction == f"Port {port} of {app} is down."
    assert a.step_command(a.definition.setup[0]) == f"#!/bin/bash\nset -eu\nstart {app} --port {port}\n"
    primitive = a.definition.checks[0].primitive
    assert isinstance(primitive, PortCheck) and primitive.port == port and primitive.process == app
    assert a.definition.expected.paths == [f"/etc/{app}/*"]
    assert template.step_command(template.definition.setup[0]).count("{{") == 2, "the template is not changed"
    other = instantiate(a, 2)
    assert other.template is template and other.seed == 2
    assert {instantiate(template, s).values["port"] for s in range(10)} != {port}  # type: ignore[index]


def test_a_task_without_parameters_is_its_own_scenario(tmp_path: Path) -> None:
    task = load(make_task(tmp_path, check='file = { path = "/etc/hostname" }'))
    scenario = instantiate(task, 5)
    assert scenario.values == {} and scenario.definition is task.definition
    assert isinstance(scenario.definition.checks[0].primitive, FileCheck)


@pytest.mark.parametrize(
    ("kw", "where", "field", "problem"),
    [
        ({"instruction": "Fix {{ port }}.\n"}, "instruction.md", None, "{{ port }} names no parameter"),
        ({"setup": "#!/bin/bash\necho {{ ghost }}\n", "head": PARAMS}, "setup/break.sh", None, "{{ ghost }}"),
        ({"check": 'command = "curl :{{ prt }}/"', "head": PARAMS}, "task.toml", "checks[R1].command", "{{ prt }}"),
        ({"head": PARAMS, "check": 'port = { port = "{{ app }}" }'}, "task.toml", "checks[R1].port.port", "integer"),
        ({"head": "[parameters]\nPort = { type = 'int', min = 1, max = 2 }"}, "task.toml", "parameters", "lowercase"),
        (
            {"head": "[parameters]\na = { type = 'port', min = 9, max = 9 }\nb = { type = 'port', min = 9, max = 9 }"},
            "task.toml", "parameters", "no port of the range is free",
        ),
        ({"head": "split = 'test'"}, "task.toml", "split", "'train' or 'heldout'"),
    ],
)  # fmt: skip
def test_bad_templates_and_parameters(tmp_path: Path, kw: dict, where: str, field: str | None, problem: str) -> None:
    directory = make_task(tmp_path, **kw)
    with pytest.raises(InputError) as info:
        load(directory)
    assert info.value.file == str(directory / where)
    assert info.value.field == field
    assert problem in info.value.problem


def test_split_and_seeds_in_a_job_matrix(tmp_path: Path) -> None:
    make_task(tmp_path, task_id="open-task")
    make_task(tmp_path, task_id="secret-task", head='split = "heldout"')
    spec = JobSpec(name="j", tasks=["*"], images="all", seeds=[3, 1])
    cells, tasks = expand_matrix(spec, tmp_path, images=IMAGES)
    assert sorted(tasks) == ["open-task"]  # a glob leaves held-out tasks out
    assert [(c.task_id, c.image, c.seed) for c in cells] == [
        ("open-task", "debian-12", 3), ("open-task", "debian-12", 1),
        ("open-task", "debian-12-openrc", 3), ("open-task", "debian-12-openrc", 1),
    ]  # fmt: skip
    with pytest.raises(InputError, match=r"held-out task.*secret-task.*--include-heldout") as info:
        expand_matrix(JobSpec(name="j", split="all"), tmp_path, images=IMAGES)
    assert info.value.field == "include_heldout"
    both = expand_matrix(JobSpec(name="j", split="all", include_heldout=True), tmp_path, images=IMAGES)[1]
    assert sorted(both) == ["open-task", "secret-task"]
    held = expand_matrix(JobSpec(name="j", split="heldout", include_heldout=True), tmp_path, images=IMAGES)[1]
    assert sorted(held) == ["secret-task"]
    with pytest.raises(InputError, match="task secret-task is in split 'heldout', the job selects 'train'"):
        expand_matrix(JobSpec(name="j", tasks=["secret-task"]), tmp_path, images=IMAGES)


def test_job_seeds_are_checked() -> None:
    with pytest.raises(ValueError, match="must not repeat"):
        JobSpec(name="j", seeds=[1, 1])
    with pytest.raises(ValueError, match="non-negative"):
        JobSpec(name="j", seeds=[-1])
    assert JobSpec(name="j").seeds == [0]


def test_service_name_forms() -> None:
    assert ServiceCheck(name="systemd-resolved.service").name == "systemd-resolved.service"
    with pytest.raises(ValueError):
        ServiceCheck(name="nginx; reboot")

"""Job definitions (`jobs/*.yaml`), the task x image matrix, job creation and the
`testbed jobs` commands (without VMs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from sqlalchemy import select
from typer.testing import CliRunner

from testbed.cli.jobs import _spec, jobs_app
from testbed.config import Settings
from testbed.db.engine import open_database
from testbed.db.models import Run
from testbed.errors import InputError
from testbed.model.job import JobSpec, RetryPolicy, expand_matrix, load_job
from testbed.model.taskload import discover_tasks, load_definition
from testbed.runtime import image_catalog
from testbed.scheduler.launch import create, load_prepared, prepare, resolve_job_id
from testbed.testing.images import cache_image

ROOT = Path(__file__).resolve().parents[3]
STARTER = sorted(p.name for p in discover_tasks(ROOT) if load_definition(p).split == "train")  # "*" leaves held-out out


def test_shipped_jobs_load_and_expand() -> None:
    images = set(image_catalog())
    oracle = load_job(ROOT / "jobs" / "starter-oracle.yaml")
    cells, tasks = expand_matrix(oracle, ROOT, images=images)
    assert sorted(tasks) == STARTER and len(cells) == len(STARTER)
    assert all(c.image == tasks[c.task_id].definition.images[0] for c in cells)
    smoke = load_job(ROOT / "jobs" / "smoke.yaml")
    cells, _ = expand_matrix(smoke, ROOT, images=images)
    assert [(c.task_id, c.image, c.attempt) for c in cells] == [(smoke.tasks[0], "debian-12", a) for a in (1, 2, 3)]
    assert smoke.hosts[0].vm_slots == 2 and smoke.agent == "noop"
    models = load_job(ROOT / "jobs" / "compare-models.yaml")
    cells, tasks = expand_matrix(models, ROOT, images=images)
    assert len(models.agent_list) == 3 and len(cells) == len(STARTER) * 3 * 3
    assert {c.agent for c in cells} == set(models.agent_list)


def test_matrix_is_restricted_to_supported_variants_and_categories() -> None:
    images = set(image_catalog())
    spec = JobSpec(
        name="m",
        tasks=["tasks/*-*"],
        images=["debian-12", "alpine-3.20"],
        attempts=2,
        categories=["services", "storage"],
    )
    cells, tasks = expand_matrix(spec, ROOT, images=images)
    assert all(t.definition.category in ("services", "storage") for t in tasks.values())
    assert {c.image for c in cells} == {"debian-12"}  # no starter task supports alpine
    assert len(cells) == 2 * len(tasks)


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        ({"name": "x", "agent": " "}, "agent", "must name an agent"),
        ({"name": "x", "agents": ["oracle", "oracle"]}, "agents", "listed twice"),
        ({"name": "x", "agents": ["oracle", ""]}, "agents", "agents[1] is empty"),
        ({"name": "x", "agent": "noop", "agents": ["oracle"]}, None, "not both"),
        ({"name": "x", "attempts": 0}, "attempts", "greater than or equal to 1"),
        ({"name": "x", "colour": "red"}, "colour", "unknown field"),
        ({"name": "x", "hosts": [{"name": "a"}, {"name": "a"}]}, None, "duplicate host name"),
        ({"name": "x", "hosts": [{"name": "Bad Name"}]}, "hosts[Bad Name].name", "lowercase"),
        ({"name": "x", "retry": {"limit": -1}}, "retry.limit", "greater than or equal to 0"),
        (
            {"name": "x", "hosts": [{"name": "far", "uri": "qemu+ssh://root@lab2/system"}]},
            "hosts[far]",
            "needs image_cache",
        ),
        (
            {"name": "x", "hosts": [{"name": "far", "uri": "qemu+ssh://lab2/system", "image_cache": "images"}]},
            "hosts[far]",
            "absolute path",
        ),
    ],
)
def test_bad_job_files_name_file_field_and_problem(tmp_path: Path, data: dict, field: str | None, problem: str) -> None:
    import yaml

    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as err:
        load_job(path)
    assert err.value.file == str(path) and err.value.field == field and problem in err.value.problem


def test_selection_errors() -> None:
    with pytest.raises(InputError, match="matches no task directory") as err:
        expand_matrix(JobSpec(name="x", tasks=["no-such-*"]), ROOT)
    assert err.value.field == "tasks[0]"
    with pytest.raises(InputError, match="no selected task is in categories"):
        expand_matrix(JobSpec(name="x", categories=["astrology"]), ROOT)
    with pytest.raises(InputError, match="unknown image"):
        expand_matrix(JobSpec(name="x", images=["windows-95"]), ROOT, images=set(image_catalog()))


def test_retry_backoff() -> None:
    policy = RetryPolicy(limit=3, backoff_s=10, factor=3, max_backoff_s=50)
    assert [policy.delay(n) for n in (1, 2, 3)] == [10, 30, 50]


def test_flags_override_a_job_file() -> None:
    spec = _spec(ROOT / "jobs" / "smoke.yaml", None, None, None, ["oracle"], 2, 4, 1, None)
    assert (spec.agent, spec.attempts, spec.retry.limit, spec.retry.backoff_s) == ("oracle", 2, 4, 5)
    assert spec.hosts[0].vm_slots == 1 and spec.name == "smoke"
    adhoc = _spec(None, ["disk-full"], None, ["all"], None, None, None, None, "mine")
    assert adhoc.tasks == ["disk-full"] and adhoc.images == "all" and adhoc.name == "mine"
    with pytest.raises(InputError, match="--task"):
        _spec(None, None, None, None, None, None, None, None, None)


def test_prepare_create_resume_and_jobs_commands(testbed_home: Path) -> None:
    settings = Settings.from_env()
    images = image_catalog()
    url = f"sqlite:///{testbed_home / 'runs.db'}"
    db = open_database(url)
    with pytest.raises(InputError, match="no host's budget admits it"):
        prepare(
            JobSpec(name="x", tasks=["firewall-persist"], hosts=[{"name": "tiny", "vm_slots": 1}]),
            ROOT,
            images,
            settings,
        )
    with pytest.raises(InputError, match=r"nodes\[\w+\]\.image: image '[\w.-]+' is not in the image cache"):
        prepare(load_job(ROOT / "jobs" / "smoke.yaml"), ROOT, images, settings)
    for name in images:
        cache_image(settings.images_dir, name)
    prepared = prepare(load_job(ROOT / "jobs" / "smoke.yaml"), ROOT, images, settings)
    job_id = create(db, prepared)
    with db() as s:
        runs = list(s.scalars(select(Run).where(Run.job_id == job_id)))
    assert len(runs) == 3 and {r.state for r in runs} == {"pending"} and sorted(r.attempt for r in runs) == [1, 2, 3]
    assert resolve_job_id(db, job_id[:6]) == job_id
    again, cancelled = load_prepared(db, job_id)
    assert again.spec == prepared.spec and again.task_dirs == prepared.task_dirs and not cancelled

    app = typer.Typer()
    app.add_typer(jobs_app, name="jobs")
    runner = CliRunner(env={"COLUMNS": "200"})
    listed = runner.invoke(app, ["jobs", "list", "--db", url])
    assert listed.exit_code == 0 and job_id[:12] in listed.output and "smoke" in listed.output
    shown = runner.invoke(app, ["jobs", "show", job_id[:8], "--db", url])
    assert shown.exit_code == 0 and "pending 3" in shown.output
    cancelled_out = runner.invoke(app, ["jobs", "cancel", job_id[:8], "--db", url])
    assert cancelled_out.exit_code == 0 and "3 pending run(s) cancelled" in cancelled_out.output
    assert load_prepared(db, job_id)[1]


def test_several_agents_make_an_agent_by_cell_matrix(testbed_home: Path) -> None:
    images = image_catalog()
    cache_image(Settings.from_env().images_dir, "debian-12")  # prepare() checks the images are cached
    spec = JobSpec(name="cmp", tasks=["web-port-conflict", "disk-full"], agents=["noop", "oracle"], attempts=2)
    assert spec.agent_list == ["noop", "oracle"] and JobSpec(name="one").agent_list == ["oracle"]
    cells, _ = expand_matrix(spec, ROOT, images=set(images))
    assert [(c.task_id, c.agent, c.attempt) for c in cells] == [
        (task, agent, attempt)
        for task in ("disk-full", "web-port-conflict")
        for agent in ("noop", "oracle")
        for attempt in (1, 2)
    ]
    db = open_database(f"sqlite:///{testbed_home / 'runs.db'}")
    job_id = create(db, prepare(spec, ROOT, images, Settings.from_env()))
    with db() as s:
        rows = [(r.task_id, r.agent) for r in s.scalars(select(Run).where(Run.job_id == job_id))]
    assert sorted(rows) == sorted((c.task_id, c.agent) for c in cells) and len(rows) == 8
    # Flags replace the file's agents: one stays `agent`, several become `agents`.
    assert _spec(None, ["disk-full"], None, None, ["noop", "oracle"], None, None, None, None).agents == [
        "noop",
        "oracle",
    ]
    single = _spec(None, ["disk-full"], None, None, ["noop"], None, None, None, None)
    assert (single.agent, single.agents) == ("noop", [])


def test_unknown_agents_are_refused_before_anything_is_written(testbed_home: Path) -> None:
    images = image_catalog()
    cache_image(Settings.from_env().images_dir, "debian-12")  # prepare() checks the images are cached
    for spec, field in (
        (JobSpec(name="x", tasks=["disk-full"], agents=["oracle", "gpt"]), "agents[1]"),
        (JobSpec(name="x", tasks=["disk-full"], agent="openai:m?colour=red"), "agent"),
    ):
        with pytest.raises(InputError) as err:
            prepare(spec, ROOT, images, Settings.from_env(), file=Path("job.yaml"))
        assert (err.value.field, err.value.file) == (field, "job.yaml")
    # An LLM agent and a plug-in-shaped name that resolves are accepted as launch accepts them.
    prepare(JobSpec(name="x", tasks=["disk-full"], agents=["openai:m", "oracle"]), ROOT, images, Settings.from_env())


def test_jobs_list_and_show_json(testbed_home: Path) -> None:
    images = image_catalog()
    cache_image(Settings.from_env().images_dir, "debian-12")  # prepare() checks the images are cached
    url = f"sqlite:///{testbed_home / 'runs.db'}"
    db = open_database(url)
    spec = JobSpec(name="cmp", tasks=["disk-full"], agents=["noop", "oracle"])
    job_id = create(db, prepare(spec, ROOT, images, Settings.from_env()))
    app = typer.Typer()
    app.add_typer(jobs_app, name="jobs")
    runner = CliRunner()
    [listed] = json.loads(runner.invoke(app, ["jobs", "list", "--db", url, "--json"]).output)
    assert (listed["id"], listed["name"], listed["runs"], listed["pending"]) == (job_id, "cmp", 2, 2)
    shown = json.loads(runner.invoke(app, ["jobs", "show", job_id[:6], "--db", url, "--json"]).output)
    assert shown["job"]["id"] == job_id and shown["config"]["spec"]["agents"] == ["noop", "oracle"]
    assert [(r["agent"], len(r["id"])) for r in shown["runs"]] == [("noop", 32), ("oracle", 32)]
    table = runner.invoke(app, ["jobs", "show", job_id, "--db", url]).output
    assert "agents noop, oracle" in table and all(r["id"] in table for r in shown["runs"])  # whole ids in a pipe

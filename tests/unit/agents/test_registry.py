"""`--agent NAME:ARGS` through real `testbed.agents` entry points: a distribution built in tmp
(a package and its dist-info with entry_points.txt) put on sys.path, found by
importlib.metadata; and the built-ins, which always win."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from testbed.agents.base import Action, Agent, Observation
from testbed.agents.openai_agent import OpenAIAgent
from testbed.agents.registry import ENTRY_POINT_GROUP, installed_plugins, plugin_name
from testbed.agents.scripted import NoopAgent, SequenceAgent, make_agent
from testbed.errors import InputError
from tests.conftest import ROOT

PLUGIN = '''
from testbed.agents.base import Action, Agent


class EchoAgent(Agent):
    """Runs `echo ARGS` once on the first node."""

    def __init__(self, spec, task):
        self.args = spec.partition(":")[2]
        self.task = task
        self.done = False

    async def next_action(self, last):
        if self.done:
            return None
        self.done = True
        return Action("node", f"echo {self.args}")


def make_named(spec, task):
    agent = EchoAgent(spec, task)
    agent.name = "named-by-factory"
    return agent


def refuse(spec, task):
    from testbed.errors import InputError
    raise InputError(None, "--agent", f"bad args in {spec}")


def explode(spec, task):
    raise RuntimeError("boom")


def not_an_agent(spec, task):
    return "hello"


class Plain:
    pass


NUMBER = 7
'''

ENTRY_POINTS = """
[testbed.agents]
echo = tbplug.agents:EchoAgent
named = tbplug.agents:make_named
refuse = tbplug.agents:refuse
explode = tbplug.agents:explode
stringy = tbplug.agents:not_an_agent
plain = tbplug.agents:Plain
number = tbplug.agents:NUMBER
missing = tbplug.nowhere:Agent
oracle = tbplug.agents:EchoAgent
twice = tbplug.agents:EchoAgent
"""


def distribution(root: Path, name: str, entry_points: str, package: str | None = None) -> Path:
    """A minimal installed distribution under `root`: its dist-info and, optionally, `tbplug`."""
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    if package is not None:
        (root / "tbplug").mkdir()
        (root / "tbplug" / "__init__.py").write_text("")
        (root / "tbplug" / "agents.py").write_text(package)
    return root


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = distribution(tmp_path / "site", "tbplug", ENTRY_POINTS, PLUGIN)
    distribution(tmp_path / "site2", "tbother", "[testbed.agents]\ntwice = other.module:Agent\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(tmp_path / "site2"))
    for module in [m for m in sys.modules if m == "tbplug" or m.startswith("tbplug.")]:
        monkeypatch.delitem(sys.modules, module)
    return site


TASK = SimpleNamespace(id="demo")


def test_plugin_name() -> None:
    assert plugin_name("myagent:a:b?x=1") == "myagent"
    assert plugin_name("myagent?x=1") == "myagent" and plugin_name("myagent") == "myagent"


def test_an_agent_subclass_is_built_with_spec_and_task(plugins: Path) -> None:
    assert "echo" in installed_plugins()
    agent = make_agent("echo:hello world", TASK)  # type: ignore[arg-type]
    assert type(agent).__name__ == "EchoAgent" and isinstance(agent, Agent)
    assert agent.name == "echo:hello world"  # left at the default: named after the spec
    assert agent.args == "hello world" and agent.task is TASK  # type: ignore[attr-defined]

    async def first() -> tuple[Action | None, Action | None]:
        return await agent.next_action(None), await agent.next_action(Observation("node", "x", "", "", 0))

    import asyncio

    assert asyncio.run(first()) == (Action("node", "echo hello world"), None)


def test_a_factory_is_called_with_spec_and_task(plugins: Path) -> None:
    agent = make_agent("named:42", TASK)  # type: ignore[arg-type]
    assert agent.name == "named-by-factory" and agent.args == "42"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("ghost:1", "unknown agent 'ghost' (use oracle, noop, replay:FILE or openai:MODEL, or an installed plug-in:"),
        ("refuse:x", "bad args in refuse:x"),
        ("explode", "agent plug-in 'explode' (tbplug.agents:explode) failed: RuntimeError: boom"),
        ("stringy", "agent plug-in 'stringy' (tbplug.agents:not_an_agent) returned str, not a testbed Agent"),
        ("plain", "agent plug-in 'plain' (tbplug.agents:Plain) is a class but not a testbed Agent subclass"),
        ("number", "agent plug-in 'number' (tbplug.agents:NUMBER) is neither an Agent subclass nor a factory"),
        ("missing", "agent plug-in 'missing' (tbplug.nowhere:Agent) failed to load: ModuleNotFoundError"),
        ("twice", "agent plug-in 'twice' is declared more than once: other.module:Agent, tbplug.agents:EchoAgent"),
    ],
)
def test_plugin_failures_are_input_errors_naming_it(plugins: Path, spec: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        make_agent(spec, TASK)  # type: ignore[arg-type]
    assert err.value.field == "--agent" and problem in err.value.problem, err.value.problem
    if spec == "ghost:1":
        assert "echo" in err.value.problem  # the installed ones are listed


def test_builtins_win_over_plugins(plugins: Path, tmp_path: Path) -> None:
    assert "oracle" in installed_plugins()  # declared by the plug-in, but never used for `oracle`
    assert isinstance(make_agent("noop", TASK), NoopAgent)  # type: ignore[arg-type]
    replay = tmp_path / "r.jsonl"
    replay.write_text('{"node": "node", "command": "id"}\n')
    agent = make_agent(f"replay:{replay}", TASK)  # type: ignore[arg-type]
    assert isinstance(agent, SequenceAgent) and agent.actions == [Action("node", "id")]
    assert isinstance(make_agent("openai:m", TASK), OpenAIAgent)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no oracle solution"):
        make_agent("oracle", SimpleNamespace(definition=SimpleNamespace(oracle=None), directory=tmp_path))  # type: ignore[arg-type]


def test_a_fresh_interpreter_finds_the_plugin_and_the_cli_exits_2_on_a_bad_one(
    plugins: Path, testbed_home: Path
) -> None:
    """Through PYTHONPATH, as an installed distribution would be found; nothing is created."""
    env = {"PYTHONPATH": f"{plugins}:{ROOT}", "TESTBED_HOME": str(testbed_home), "PATH": "/usr/bin:/bin"}
    task = ROOT / "tasks" / "web-port-conflict"
    code = (
        "import sys; from testbed.agents.scripted import make_agent; from testbed.cli import main\n"
        "print(type(make_agent('echo:x', None)).__name__, flush=True)\n"
        f"sys.argv = ['testbed', 'run', {str(task)!r}, '--agent', 'missing']; main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    assert proc.stdout.strip() == "EchoAgent", proc.stderr
    assert proc.returncode == 2 and "agent plug-in 'missing' (tbplug.nowhere:Agent) failed to load" in proc.stderr
    assert not (testbed_home / "labs").exists() and not (testbed_home / "testbed.db").exists()
    assert ENTRY_POINT_GROUP == "testbed.agents"

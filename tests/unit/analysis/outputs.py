"""What the command analysis says about a corpus of command strings, as canonical JSON.

Proves that restructuring the command analysis changes no output: the fixture
`tests/unit/fixtures/command_outputs.jsonl.gz` holds, for every command of the corpus, the
parse (simple commands after launchers), the impact hits with their evidence, the safety
decisions (default policy and `allow_power`), the effects attribution sees, and the
attribution of a fixed set of targets to the command alone. `test_identity.py` recomputes
them and compares line by line.

The corpus is every string literal in tests/**/*.py, every `command` field of the JSON(L)
fixtures, every task's scripts and task.toml strings (whole and line by line), every
backtick span in the analysis docstrings and the README, and `sudo …`/`bash -c '…'`
variants of the labelled impact corpus. It was extracted once, at the commit before the
restructuring, and is kept in the fixture; `--record` rewrites the outputs of the stored
corpus (to accept a named bug fix), `--extract` rebuilds the corpus first.

    python -m tests.unit.analysis.outputs --record      # after a reviewed change
    python -m tests.unit.analysis.outputs --diff        # what differs, command by command

Only entry points that exist before and after the restructuring are used.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import shlex
import sys
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from testbed.analysis import parse
from testbed.analysis.attribution import CommandView, Target, attribute, command_effects
from testbed.analysis.impact import analyze
from testbed.analysis.safety import SafetyPolicy

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "unit" / "fixtures" / "command_outputs.jsonl.gz"
MAX_LEN = 4000

TARGETS: tuple[Target, ...] = (
    Target("path", "/etc/nginx/nginx.conf"),
    Target("path", "/etc/motd"),
    Target("path", "/root/.ssh/id_ed25519"),
    Target("path", "/opt/app/config.yml"),
    Target("path", "/var/www/html/index.html"),
    Target("unit", "nginx.service", paths=("/etc/systemd/system/nginx.service",), names=("nginx",)),
    Target("unit", "nftables.service", names=("nft",)),
    Target("unit", "metrics-exporter.service", names=("python3",)),
    Target("package", "nginx"),
    Target("pkg_state", "dpkg"),
    Target("repo", "sources", tokens=("example.com",)),
    Target("user", "bob"),
    Target("group", "docker"),
    Target("port", "8080", names=("python3", "nginx")),
    Target("port", "9000", names=("nc",)),
    Target("process", "python3 -m http.server 8000", names=("python3",)),
    Target("sysctl", "net.ipv4.ip_forward"),
    Target("firewall", "tcp dport 9000 drop", tokens=("9000", "input")),
    Target("network", "10.0.0.5/24 dev eth0", tokens=("10.0.0.5", "eth0")),
    Target("mount", "/mnt/data"),
    Target("hostname", "web"),
    Target("cron_spool", "/var/spool/cron/crontabs/root"),
)
"""Targets attributed to each command (only matches are recorded)."""

_POWER = SafetyPolicy(allow_power=True)
_DEFAULT = SafetyPolicy()


# ------------------------------------------------------------------------------ corpus


def _py_strings(path: Path) -> Iterator[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def _json_commands(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "command" and isinstance(item, str):
                yield item
            else:
                yield from _json_commands(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_commands(item)


def _toml_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _toml_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _toml_strings(item)


def _whole_and_lines(text: str) -> Iterator[str]:
    yield text
    yield from text.splitlines()


def _backticks(text: str) -> Iterator[str]:
    yield from re.findall(r"`([^`\n]+)`", text)


def _fixture_commands(path: Path) -> Iterator[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            yield from _json_commands(json.loads(line))
        except json.JSONDecodeError:
            continue


def extract_corpus() -> list[str]:
    """Every command string found in tests/, tasks/, the analysis docs and the README."""
    found: list[str] = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        found += _py_strings(path)
    for path in sorted((ROOT / "tests").rglob("*.json*")):
        if path.suffix in (".json", ".jsonl"):
            found += _fixture_commands(path)
    for path in sorted((ROOT / "tasks").rglob("*")):
        if path.suffix == ".sh":
            found += _whole_and_lines(path.read_text(encoding="utf-8"))
        elif path.name == "task.toml":
            for text in _toml_strings(tomllib.loads(path.read_text(encoding="utf-8"))):
                found += _whole_and_lines(text)
    for path in [*sorted((ROOT / "testbed" / "analysis").rglob("*.py")), ROOT / "README.md"]:
        found += _backticks(path.read_text(encoding="utf-8"))
    labelled = ROOT / "tests" / "unit" / "fixtures" / "impact_corpus.jsonl"
    for command in _fixture_commands(labelled):
        found += [f"sudo {command}", f"bash -c {shlex.quote(command)}"]
    return _unique(s for s in found if s.strip() and len(s) <= MAX_LEN)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# ------------------------------------------------------------------------------ outputs


def _parse(command: str) -> dict[str, Any]:
    parsed = parse(command)
    commands = [
        [
            list(c.argv),
            list(c.assignments),
            [[r.op, r.target, r.fd, r.body] for r in c.redirects],
            c.pipe_index,
            c.pipe_len,
            c.background,
            c.function,
            list(c.via),
            c.stdin_script,
            c.stdin_from,
        ]
        for c in parsed.commands
    ]
    return {"commands": commands, "functions": sorted(parsed.functions), "fallback": parsed.fallback}


def _effects(eff: Any) -> dict[str, Any]:
    words = sorted(eff.words)
    config = sorted(eff.config_words)
    return {
        "writes": [[w.value, w.mode, w.verb] for w in eff.writes],
        "units": {u: sorted(v) for u, v in sorted(eff.units.items())},
        "packages": sorted(eff.packages),
        "package_change": eff.package_change,
        "package_verbs": sorted(eff.package_verbs),
        "repo_change": eff.repo_change,
        "accounts": sorted(eff.accounts),
        "accounts_stdin": eff.accounts_stdin,
        "firewall_write": eff.firewall_write,
        "sysctl_keys": sorted(eff.sysctl_keys),
        "sysctl_load": eff.sysctl_load,
        "network_write": eff.network_write,
        "mounts": sorted(eff.mounts),
        "mount_all": eff.mount_all,
        "hostname": eff.hostname,
        "crontab": eff.crontab,
        "started": [list(a) for a in eff.started],
        "words": words,
        "config_words": "=words" if config == words else config,
    }


def _attribution(command: str) -> list[list[Any]]:
    view = CommandView(id=1, seq=1, node="n", phase="agent", source="agent", command=command, exit_code=0)
    out: list[list[Any]] = []
    for index, target in enumerate(TARGETS):
        got = attribute(target, [view], "n")
        if got.confidence != "none":
            out.append([index, got.confidence, got.method])
    remote = attribute(TARGETS[0], [view], "other")
    if remote.confidence != "none":
        out.append(["remote", remote.confidence, remote.method])
    return out


def _safety(policy: SafetyPolicy, command: str) -> list[Any]:
    d = policy.evaluate(command)
    return [d.action, d.rule, d.reason, d.message_for_agent, list(d.rules)]


def outputs(command: str) -> dict[str, Any]:
    """Everything the analysis says about one command, JSON-ready."""
    effects = command_effects(command)
    return {
        "command": command,
        "parse": _parse(command),
        "impact": [h.to_evidence() for h in analyze(command)],
        "safety": _safety(_DEFAULT, command),
        "safety_power": _safety(_POWER, command)[:2],
        "local": _effects(effects.local),
        "remote": _effects(effects.remote),
        "parts": [[list(sc.argv), list(sc.via)] for sc, _ in effects.parts],
        "attribution": _attribution(command),
    }


def line_of(command: str) -> str:
    """The canonical fixture line of one command."""
    return json.dumps(outputs(command), ensure_ascii=False, sort_keys=True)


# ------------------------------------------------------------------------------ fixture


def read_fixture(path: Path = FIXTURE) -> list[str]:
    """The recorded lines."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def fixture_commands(path: Path = FIXTURE) -> list[str]:
    """The recorded corpus."""
    return [json.loads(line)["command"] for line in read_fixture(path)]


def write_fixture(commands: Iterable[str], path: Path = FIXTURE) -> int:
    """Record the outputs of `commands`; returns how many were written."""
    lines = [line_of(c) for c in commands]
    with gzip.GzipFile(path, "wb", mtime=0) as raw:
        raw.write(("\n".join(lines) + "\n").encode("utf-8"))
    return len(lines)


def differences(path: Path = FIXTURE) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(command, recorded, now) for every command whose outputs changed."""
    for line in read_fixture(path):
        recorded = json.loads(line)
        now = json.loads(line_of(recorded["command"]))
        if now != recorded:
            yield recorded["command"], recorded, now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", action="store_true", help="rewrite the outputs of the stored corpus")
    group.add_argument("--extract", action="store_true", help="rebuild the corpus from the tree, then record")
    group.add_argument("--diff", action="store_true", help="print what differs from the fixture")
    args = parser.parse_args(argv)
    if args.diff:
        changed = 0
        for command, recorded, now in differences():
            changed += 1
            keys = sorted(k for k in now if now.get(k) != recorded.get(k))
            print(f"--- {command!r}")
            for key in keys:
                print(f"  {key}:\n    was {json.dumps(recorded.get(key))}\n    now {json.dumps(now.get(key))}")
        print(f"changed={changed}")
        return 1 if changed else 0
    commands = extract_corpus() if args.extract else fixture_commands()
    print(f"recorded={write_fixture(commands)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

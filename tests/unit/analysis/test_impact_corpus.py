"""High-impact classes: a labelled corpus with exact class sets, evidence, robustness."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from testbed.analysis.command import parse
from testbed.analysis.impact import IMPACT_CLASSES, analyze, classify

CORPUS_FILE = Path(__file__).parents[1] / "fixtures" / "impact_corpus.jsonl"


def _load() -> list[dict[str, object]]:
    return [json.loads(line) for line in CORPUS_FILE.read_text().splitlines() if line.strip()]


CORPUS = _load()


def test_corpus_is_large_distinct_and_covers_every_class() -> None:
    commands = [str(o["command"]) for o in CORPUS]
    assert len(commands) >= 200
    assert len(set(commands)) == len(commands)
    labelled = {c for o in CORPUS for c in o["impact"]}  # type: ignore[attr-defined]
    assert labelled == set(IMPACT_CLASSES)
    assert sum(1 for o in CORPUS if not o["impact"]) >= 100  # plenty of negatives / traps


@pytest.mark.parametrize("entry", CORPUS, ids=[str(o["command"])[:60] for o in CORPUS])
def test_corpus_exact_classes(entry: dict[str, object]) -> None:
    assert classify(str(entry["command"])) == entry["impact"]


def test_two_classes_with_evidence() -> None:
    hits = analyze("sudo systemctl stop nginx && rm -fr /var/cache/x")
    assert [(h.impact_class, h.argv, h.rule) for h in hits] == [
        ("service_stop", ("systemctl", "stop", "nginx"), "systemctl-stop"),
        ("recursive_force_remove", ("rm", "-fr", "/var/cache/x"), "rm-recursive-force"),
    ]
    assert hits[0].via == ("sudo",)
    assert hits[1].targets == ("/var/cache/x",)
    assert hits[0].to_evidence()["class"] == "service_stop"


def test_classify_is_sorted_and_unique() -> None:
    got = classify("iptables -F; iptables -F; systemctl stop firewalld")
    assert got == sorted(set(got)) == ["firewall_disable", "network_flush", "service_stop"]


def test_nested_shell_strings_are_followed() -> None:
    hits = analyze("ssh web1 \"sudo bash -c 'kill -9 1'\"")
    assert [(h.impact_class, h.via) for h in hits] == [("force_kill", ("ssh", "sudo", "bash -c"))]


def test_heredoc_to_shell_is_commands_but_to_cat_is_data() -> None:
    assert classify("bash <<'EOF'\nreboot\nEOF") == ["power_state"]
    assert classify("cat <<'EOF' > /tmp/x.sh\nreboot\nEOF") == []
    # an unquoted here-document expands $(…): that part does run
    assert classify("cat <<EOF > /tmp/x\n$(reboot)\nEOF") == ["power_state"]


def test_parser_reports_functions_pipelines_and_background() -> None:
    parsed = parse(":(){ :|:& };:")
    assert parsed.functions == frozenset({":"})
    inner = [c for c in parsed.commands if c.function == ":"]
    assert len(inner) == 2 and all(c.background and c.pipe_len == 2 for c in inner)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "'",
        '"',
        "$(",
        "`",
        "((",
        "<<EOF",
        "bash -c",
        "ssh",
        "sudo",
        "case x in",
        "$(" * 500,
        "(" * 3000 + "rm -rf /",
        "\\" * 1001,
        "a" * 100_000,
        "{ " * 2000,
        "bash -c '" * 40,
        "\x00\x01\x02",
        "rm -rf / <<<",
        "echo ${x:-$(reboot)",
    ],
)
def test_never_raises_on_odd_input(text: str) -> None:
    assert isinstance(classify(text), list)


def test_never_raises_on_random_input() -> None:
    rng = random.Random(20240601)
    alphabet = [
        *"ab rm-f/$()`'\"\\|&;<>{}[]#\n=*!:~09",
        "<<EOF",
        "EOF",
        "bash -c ",
        "ssh h ",
        "sudo ",
        "case ",
        " in ",
        "esac",
        "((",
        "))",
        "[[",
        "]]",
        "<<<",
        "() {",
        "}",
    ]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert isinstance(classify(text), list)

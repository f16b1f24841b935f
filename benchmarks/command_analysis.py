"""Benchmark the command analysis: one parse per command, shared by every consumer.

For the first `CACHE_SIZE` command strings of the recorded corpus
(tests/unit/fixtures/command_outputs.jsonl.gz: strings from tests/, tasks/ and the docs)
it does what one agent step does —
`SafetyPolicy.evaluate`, the recorder's `classify`, the session's `analyze` — plus the
study's classes and residue attribution's `command_effects`, first with empty caches
(cold: each command parsed once) and then again (warm: every consumer reads the cached
parse). Prints per-step times and, on the last line, `parses_per_step` (goal: 1.0, was 3
per step and a fourth in residue before the one parse), `cold_us_per_step`,
`warm_us_per_step` and `warm_speedup`.

Usage: .venv/bin/python benchmarks/command_analysis.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from pathlib import Path

from testbed.analysis import impact, study
from testbed.analysis.attribution import command_effects
from testbed.analysis.command import effects_of
from testbed.analysis.command.line import CACHE_SIZE
from testbed.analysis.safety import DEFAULT_POLICY

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "unit" / "fixtures" / "command_outputs.jsonl.gz"


def _commands() -> list[str]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line)["command"] for line in f if line.strip()]


def _step(command: str) -> None:
    DEFAULT_POLICY.evaluate(command)
    impact.classify(command)
    impact.analyze(command)
    study.study_classify(command)
    command_effects(command)


def _clear() -> None:
    for cache in (effects_of, impact._hits, study._hits, command_effects):
        cache.cache_clear()


def _timed(commands: list[str]) -> float:
    start = time.perf_counter()
    for command in commands:
        _step(command)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    commands = _commands()[:CACHE_SIZE]  # more would cycle through the LRU caches
    cold: list[float] = []
    warm: list[float] = []
    for _ in range(args.repeat):
        _clear()
        cold.append(_timed(commands))
        parses = effects_of.cache_info().misses
        warm.append(_timed(commands))
    n = len(commands)
    cold_us, warm_us = statistics.median(cold) / n * 1e6, statistics.median(warm) / n * 1e6
    print(f"commands {n}; cold step {cold_us:.0f} us, warm step {warm_us:.1f} us (median of {args.repeat})")
    print(
        f"parses_per_step={parses / n:.2f} cold_us_per_step={cold_us:.0f} "
        f"warm_us_per_step={warm_us:.1f} warm_speedup={cold_us / warm_us:.0f}"
    )


if __name__ == "__main__":
    main()

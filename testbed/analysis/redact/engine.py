"""How the rules run: one pass finds every key word, then only the rules it calls for run.

1. One Aho-Corasick pass (a DFA, `ahocorasick_rs`) over the folded text (`scan.fold`) finds every occurrence of
   every needle of every rule, in time linear in the text. Text holding none (most
   command output) is returned as it is: that pass is all it costs.
2. A rule runs when one of its needles occurred and its `confirm` (if any) agrees: a cheap
   test, on the text and the needles found, for needles that are common words or characters
   (`://`, `curl`, `mysql`): text whose needles all fail it costs no more than that.
3. Each rule records the secrets it finds as spans of the original text; overlapping spans
   are merged, and the text is rebuilt once with `[REDACTED:kind]` in their place. Rules
   never see each other's output, so their order does not matter, and a text redacted
   once holds nothing a second pass finds (markers are blanked in the folded copy).

`work(text)` is the number of characters the rules examined for `text` (see
`Scan.ops`): the linearity tests assert on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Set
from dataclasses import dataclass

import ahocorasick_rs

from testbed.analysis.redact import argv, assign, commands, tokens
from testbed.analysis.redact.keys import STEMS
from testbed.analysis.redact.scan import Scan, fold, tag


@dataclass(frozen=True)
class Rule:
    """A rule: it runs when one of `needles` (folded) occurs and `confirm` agrees."""

    name: str
    needles: tuple[str, ...]
    run: Callable[[Scan], None]
    uses: tuple[str, ...] = ()
    """Further needles whose occurrences the rule reads."""
    confirm: Callable[[str, str, Set[str]], bool] | None = None
    """(text, folded text, needles found) -> whether the rule can find anything."""


_COMMAND_NEEDLES = frozenset(commands.NEEDLES)


def _urls_worth_it(raw: str, low: str, found: Set[str]) -> bool:
    """A URL can only hold credentials before an `@`."""
    return "@" in raw


def commands_present(low: str, found: Set[str]) -> list[str]:
    """The command names found that occur with what makes them worth reading
    (`commands.evidence_for`)."""
    return sorted(
        needle
        for needle in found & _COMMAND_NEEDLES
        if not (evidence := commands.evidence_for(needle)) or any(e in low for e in evidence)
    )


def _commands_worth_it(raw: str, low: str, found: Set[str]) -> bool:
    return bool(commands_present(low, found))


def _run_commands(scan: Scan) -> None:
    argv.run_commands(scan, commands_present(scan.low, scan.present(_COMMAND_NEEDLES)))


RULES: tuple[Rule, ...] = (
    Rule("private_key", ("-----begin ",), tokens.run_pem, uses=("-----end ",)),
    Rule("putty", ("private-lines:",), tokens.run_putty),
    Rule("tokens", tokens.NEEDLES, tokens.run_formats),
    Rule("vault_legacy", (*tokens.VAULT_LEGACY_NEEDLES, tokens.START + "s."), tokens.run_vault_legacy),
    Rule("jwt", ("eyj",), tokens.run_jwt),
    Rule("azure", ("q~",), tokens.run_azure_secret),
    Rule("hashes", tokens.HASH_NEEDLES, tokens.run_hashes),
    Rule("key_value", STEMS, assign.run_key_values),
    Rule("headers", ("authorization", "bearer"), assign.run_headers),
    Rule("urls", ("://",), assign.run_urls, confirm=_urls_worth_it),
    Rule("netrc", ("password",), assign.run_netrc),
    Rule("sql", ("identified", "password"), assign.run_sql),
    Rule("directives", ("requirepass", "masterauth"), assign.run_directives),
    Rule("pgpass", assign.PGPASS_NEEDLES, assign.run_pgpass),
    Rule("commands", commands.NEEDLES, _run_commands, confirm=_commands_worth_it),
)


def _automaton() -> tuple[ahocorasick_rs.AhoCorasick, tuple[str, ...], dict[str, tuple[int, ...]], frozenset[str]]:
    gates: dict[str, list[int]] = {}
    for index, rule in enumerate(RULES):
        for needle in rule.needles:
            gates.setdefault(needle, []).append(index)
    known = frozenset(needle for rule in RULES for needle in (*rule.needles, *rule.uses))
    patterns = tuple(sorted(n for n in known if not n.startswith(tokens.START)))
    automaton = ahocorasick_rs.AhoCorasick(patterns, implementation=ahocorasick_rs.Implementation.DFA)
    return automaton, patterns, {needle: tuple(rules) for needle, rules in gates.items()}, known


_AUTOMATON, _PATTERNS, _GATES, NEEDLES = _automaton()
_AT_START = {n[len(tokens.START) :]: n for n in NEEDLES if n.startswith(tokens.START)}
_AT_START_PREFIXES = tuple(_AT_START)
_SURROGATES = re.compile("[\ud800-\udfff]")
_FIND = _AUTOMATON.find_matches_as_indexes


def analyse(text: str) -> Scan | None:
    """The scan of `text` with the secrets found, or None when no rule can find any."""
    low = fold(text)
    try:
        matches = _FIND(low, overlapping=True)
    except UnicodeEncodeError:  # lone surrogates (bytes decoded with surrogateescape)
        matches = _FIND(_SURROGATES.sub("\ufffd", low), overlapping=True)
    at_start = low.startswith(_AT_START_PREFIXES)
    if not matches and not at_start:
        return None  # the common case: no needle at all
    hits: dict[str, list[int]] = {}
    for index, start, _end in matches:
        needle = _PATTERNS[index]
        at = hits.get(needle)
        if at is None:
            hits[needle] = [start]
        else:
            at.append(start)
    if at_start:
        hits.update((needle, [0]) for prefix, needle in _AT_START.items() if low.startswith(prefix))
    found = hits.keys()
    chosen = [
        rule
        for rule in map(RULES.__getitem__, {index for needle in found for index in _GATES.get(needle, ())})
        if rule.confirm is None or rule.confirm(text, low, found)
    ]
    if not chosen:
        return None
    scan = Scan(text, low, hits, NEEDLES)
    for rule in chosen:
        rule.run(scan)
    return scan


def rebuild(scan: Scan) -> tuple[str, int, tuple[str, ...]]:
    """The text of `scan` with its secrets replaced: (text, count, sorted kinds)."""
    spans = scan.merged()
    raw, parts, last = scan.raw, [], 0
    for start, end, kind in spans:
        parts.append(raw[last:start])
        parts.append(tag(kind))
        last = end
    parts.append(raw[last:])
    return "".join(parts), len(spans), tuple(sorted({kind for _, _, kind in spans}))


def work(text: str) -> int:
    """Characters examined to redact `text` (see `Scan.ops`)."""
    scan = analyse(text)
    if scan is None:
        return len(text)
    scan.merged()
    return scan.ops

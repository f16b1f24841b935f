"""How the rules run: one pass finds every key word, then only the rules it calls for run.

1. One Aho-Corasick pass over the folded text (`scan.fold`) finds every occurrence of
   every needle of every rule, in time linear in the text. Text holding none (most
   command output) is returned as it is: that pass is all it costs.
2. A rule runs when one of its needles occurred and its `confirm` (if any) agrees: a cheap
   test for needles that are common words or characters (`$`, `*`, `s.`, `curl`).
3. Each rule records the secrets it finds as spans of the original text; overlapping spans
   are merged, and the text is rebuilt once with `[REDACTED:kind]` in their place. Rules
   never see each other's output, so their order does not matter, and a text redacted
   once holds nothing a second pass finds (markers are blanked in the folded copy).

`work(text)` is the number of characters the rules examined for `text` (see
`Scan.ops`): the linearity tests assert on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import ahocorasick

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
    confirm: Callable[[Scan], bool] | None = None


_VAULT_LEGACY = re.compile(r"s\.[A-Za-z0-9]{24}(?![\w.])")
_CRYPT = re.compile(r"\$(?:1|2[abxy]?|5|6|7|y|gy|md5|sha1|apr1|argon2(?:id|i|d)|scrypt)\$")
_MYSQL_HASH = re.compile(r"\*[0-9A-F]{40}")


def _tokens_worth_it(scan: Scan) -> bool:
    return any(scan.hits(p) for p in tokens.NEEDLES if p != "s.") or _VAULT_LEGACY.search(scan.raw) is not None


def _hashes_worth_it(scan: Scan) -> bool:
    if any(scan.hits(p) for p in tokens.HASH_PREFIXES):
        return True
    if scan.hits("$") and _CRYPT.search(scan.raw):
        return True
    return bool(scan.hits("*")) and _MYSQL_HASH.search(scan.raw) is not None


def _commands_present(scan: Scan) -> list[str]:
    return [
        needle
        for needle in commands.NEEDLES
        if scan.hits(needle) and (not (ev := commands.evidence_for(needle)) or any(e in scan.low for e in ev))
    ]


RULES: tuple[Rule, ...] = (
    Rule("private_key", ("-----begin ",), tokens.run_pem, uses=("-----end ",)),
    Rule("putty", ("private-lines:",), tokens.run_putty),
    Rule("tokens", tokens.NEEDLES, tokens.run_formats, confirm=_tokens_worth_it),
    Rule("jwt", ("eyj",), tokens.run_jwt),
    Rule("azure", ("q~",), tokens.run_azure_secret),
    Rule(
        "hashes", ("$", "pbkdf2_", "{ssha", "{sha", "{smd5", "{md5", "*"), tokens.run_hashes, confirm=_hashes_worth_it
    ),
    Rule("key_value", STEMS, assign.run_key_values),
    Rule("headers", ("authorization", "bearer"), assign.run_headers),
    Rule("urls", ("://",), assign.run_urls, confirm=lambda scan: "@" in scan.raw),
    Rule("netrc", ("password",), assign.run_netrc),
    Rule("sql", ("identified", "password"), assign.run_sql),
    Rule("directives", ("requirepass", "masterauth"), assign.run_directives),
    Rule("pgpass", assign.PGPASS_NEEDLES, assign.run_pgpass),
    Rule(
        "commands",
        commands.NEEDLES,
        lambda scan: argv.run_commands(scan, _commands_present(scan)),
        confirm=lambda scan: bool(_commands_present(scan)),
    ),
)


def _automaton() -> tuple[ahocorasick.Automaton, dict[str, tuple[int, ...]], frozenset[str]]:
    automaton = ahocorasick.Automaton()
    gates: dict[str, list[int]] = {}
    for index, rule in enumerate(RULES):
        for needle in rule.needles:
            gates.setdefault(needle, []).append(index)
        for needle in (*rule.needles, *rule.uses):
            automaton.add_word(needle, needle)
    automaton.make_automaton()
    known = frozenset(needle for rule in RULES for needle in (*rule.needles, *rule.uses))
    return automaton, {needle: tuple(rules) for needle, rules in gates.items()}, known


_AUTOMATON, _GATES, NEEDLES = _automaton()


def analyse(text: str) -> Scan | None:
    """The scan of `text` with the secrets found, or None when no rule can find any."""
    low = fold(text)
    hits: dict[str, list[int]] = {}
    for end, needle in _AUTOMATON.iter(low):
        found = hits.get(needle)
        if found is None:
            hits[needle] = [end - len(needle) + 1]
        else:
            found.append(end - len(needle) + 1)
    if not hits:
        return None
    candidates = sorted({index for needle in hits for index in _GATES.get(needle, ())})
    scan = Scan(text, low, hits, NEEDLES)
    chosen = [rule for rule in (RULES[i] for i in candidates) if rule.confirm is None or rule.confirm(scan)]
    if not chosen:
        return None
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

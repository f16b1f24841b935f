"""Secrets given to commands as arguments: `mysql -pX`, `htpasswd -b F U X`, `echo u:X | chpasswd`.

Kind: `password`.

Contract: the lines (with their `\\`-continuations) that name one of the commands below are
split into shell words the way the shell splits them (quotes, escapes, operators; a single
`&`, `;` or `|` inside a word joins it as `values.joins` decides), and so are the contents
of quoted words that name one (`sh -c 'mysql -pX'`, `{"command": "mysql -pX"}`), one level
deep. Every word that is a command name (its base name: `/usr/bin/mysql` is `mysql`)
starts a check of the words after it, up to the end of its simple command and at most
`MAX_ARGS` words, so the work is linear in the text. `commands` says, per command, which
words hold secrets:

- options whose value is a secret (`Spec.value`: `-a X`, `-aX`, `--pass=X`), attached only
  (`Spec.attached`: `mysql -pX`; `mysql -p X` prompts and X is the database), or whose
  value is `user:secret` (`Spec.userpass`: `curl -u u:X`, `smbclient -U u%X`);
- positional secrets: `htpasswd -b [-c] FILE USER X` (`-n`: `USER X`), `mosquitto_passwd
  -b`, `openssl … pass:X`, `-k X`, `openssl passwd … X`, `mysqladmin … password X`,
  `redis-cli … AUTH [user] X`, `nmcli … password X` / `wifi-sec.psk X`, `rabbitmqctl
  add_user U X`, `wpa_passphrase SSID X`, `sqlplus user/X@db`, `vault login X`, and
  `git|npm|yarn|pip|poetry|aws config[ure] [set] KEY X` when KEY names a secret;
- a secret piped to a command that reads one from standard input: `echo X | passwd
  --stdin u`, `echo u:X | chpasswd`, `echo X | sudo -S …`, `printf X | docker login
  --password-stdin`, `cryptsetup`, `kinit`, `smbpasswd`, and the same with `<<< X`.
"""

from __future__ import annotations

import bisect
import re

from testbed.analysis.redact.commands import (
    PRODUCERS,
    STDIN_FLAG,
    STDIN_READERS,
    Word,
    apply,
    spec_of,
    take,
    take_after,
    text,
)
from testbed.analysis.redact.scan import Scan
from testbed.analysis.redact.values import joins

MAX_ARGS = 64
_DEPTH = 2

_LEX = re.compile(
    r"(?P<s>(?:[ \t\r\f\v]|\\\n)++)"
    r"|(?P<n>\n)"
    r"|(?P<o>&&|\|\||;;|<<<|<<|>>|>&|&>|[;&|<>()])"
    r"|(?P<w>(?:[^\s'\"\\;&|<>()]++|\\.|'[^'\n]*+'|\"(?:[^\"\\\n]++|\\.)*+\")++)"
    r"|(?P<x>.)"
)
_SEGMENT = re.compile(r"'[^'\n]*+'|\"(?:[^\"\\\n]++|\\.)*+\"")
_REDIRECTS = frozenset({"<", ">", ">>", "<<", ">&", "&>", "<<<"})
_WORD_STARTS = frozenset(" \t\n;&|()'\"`/=$")


def run_commands(scan: Scan, needles: list[str]) -> None:
    """Check the lines naming the commands `needles` (those present and worth it)."""
    raw = scan.raw
    hits = sorted(j for needle in needles for j in scan.hits(needle) if j == 0 or raw[j - 1] in _WORD_STARTS)
    scan.ops += len(hits)
    covered = -1
    for j in hits:
        if j <= covered:
            continue
        line = scan.line_start(j)
        end = scan.line_end(line)
        while end < scan.n and end > line and raw[end - 1] == "\\":
            end = scan.line_end(end + 1)
        covered = end
        _read_region(scan, line, end, 0, hits)


def _lex(scan: Scan, start: int, end: int) -> list[tuple[str, int, int]]:
    """The tokens of `raw[start:end]`: ("w", …) words, ("o", …) operators, ("n", …) newlines."""
    tokens: list[tuple[str, int, int]] = []
    for m in _LEX.finditer(scan.raw, start, end):
        kind = m.lastgroup or "x"
        if kind == "s":
            continue
        if kind in ("w", "x") and tokens and tokens[-1][0] == "w" and tokens[-1][2] == m.start():
            tokens[-1] = ("w", tokens[-1][1], m.end())
            continue
        tokens.append(("w" if kind == "x" else kind, m.start(), m.end()))
    scan.ops += end - start + len(tokens)
    return _join_words(scan, tokens, end)


def _join_words(scan: Scan, tokens: list[tuple[str, int, int]], end: int) -> list[tuple[str, int, int]]:
    """Glue `word op word` into one word where the single operator joins them."""
    out: list[tuple[str, int, int]] = []
    k = 0
    while k < len(tokens):
        kind, s, e = tokens[k]
        if (
            kind == "o"
            and e - s == 1
            and out
            and out[-1][0] == "w"
            and out[-1][2] == s
            and k + 1 < len(tokens)
            and tokens[k + 1][0] == "w"
            and tokens[k + 1][1] == e
            and joins(scan, s, end)
        ):
            out[-1] = ("w", out[-1][1], tokens[k + 1][2])
            k += 2
            continue
        if kind == "w" and out and out[-1][0] == "w" and out[-1][2] == s:
            out[-1] = ("w", out[-1][1], e)
        else:
            out.append((kind, s, e))
        k += 1
    return out


def _read_region(scan: Scan, start: int, end: int, depth: int, hits: list[int]) -> None:
    """Split `raw[start:end]` into simple commands and check each (see the contract)."""
    tokens = _lex(scan, start, end)
    commands: list[tuple[list[Word], list[Word], str]] = []  # (words, here-strings, operator before)
    words: list[Word] = []
    here: list[Word] = []
    before = ""
    k = 0
    while k < len(tokens):
        kind, s, e = tokens[k]
        if kind == "w":
            w = Word(s, e)
            words.append(w)
            if depth < _DEPTH:
                _read_quoted(scan, w, depth, hits)
        elif kind == "o" and scan.raw[s:e] in _REDIRECTS:
            if k + 1 < len(tokens) and tokens[k + 1][0] == "w":
                if scan.raw[s:e] == "<<<":
                    here.append(Word(tokens[k + 1][1], tokens[k + 1][2]))
                k += 1
        else:
            commands.append((words, here, before))
            words, here, before = [], [], scan.raw[s:e] if kind == "o" else "\n"
        k += 1
    commands.append((words, here, before))
    names = [[_name(scan, w) if w.end - w.start <= 40 else "" for w in cmd] for cmd, _, _ in commands]
    scan.ops += sum(map(len, names))
    for index, (cmd, _here, _before) in enumerate(commands):
        _check_command(scan, cmd, names[index])
        _check_stdin(scan, commands, names, index)


def _read_quoted(scan: Scan, w: Word, depth: int, hits: list[int]) -> None:
    """Read the quoted parts of `w` that name a command as commands of their own."""
    raw = scan.raw
    k = bisect.bisect_left(hits, w.start)
    if k == len(hits) or hits[k] >= w.end or raw[w.start : w.end].isalnum():
        return
    for m in _SEGMENT.finditer(raw, w.start, w.end):
        k = bisect.bisect_left(hits, m.start() + 1)
        scan.ops += m.end() - m.start()
        if k < len(hits) and hits[k] < m.end() - 1:
            _read_region(scan, m.start() + 1, m.end() - 1, depth + 1, hits)


def _name(scan: Scan, w: Word) -> str:
    text = scan.low[w.start : w.end]
    return text.rsplit("/", 1)[-1] if "/" in text else text


def _check_command(scan: Scan, words: list[Word], names: list[str]) -> None:
    """Check every command word of a simple command with the words after it, up to the next
    command word (which is checked on its own; not one that is the value of a flag, as in
    `sshpass -p curl …`) and at most `MAX_ARGS` words: each word is read at most twice."""
    specs = [spec_of(name) for name in names]
    for k, spec in enumerate(specs):
        if spec is None:
            continue
        flags = (*spec.value, *spec.userpass)
        stop = k + 1
        while stop < len(words) and stop - k <= MAX_ARGS:
            if specs[stop] is not None:
                if text(scan, words[stop - 1]) not in flags:
                    break
                specs[stop] = None  # the value of a flag, not a command
            stop += 1
        apply(scan, spec, words[k + 1 : stop])


def _reads_stdin(scan: Scan, words: list[Word], names: list[str]) -> str | None:
    """The name of the secret reader among `words` (`chpasswd`, `passwd`, …), or None."""
    for name in names[:MAX_ARGS]:
        flags = STDIN_READERS.get(name)
        if flags is not None and (not flags or any(text(scan, w) in flags for w in words[:MAX_ARGS])):
            return name
    return "docker" if STDIN_FLAG in names[:MAX_ARGS] else None


def _check_stdin(
    scan: Scan, commands: list[tuple[list[Word], list[Word], str]], names: list[list[str]], index: int
) -> None:
    """Secrets written to a command that reads one from standard input."""
    words, here, before = commands[index]
    piped = before == "|" and index > 0 and bool(names[index - 1]) and names[index - 1][0] in PRODUCERS
    if not (here or piped):
        return
    reader = _reads_stdin(scan, words, names[index])
    if reader is None:
        return
    delimiter = ":" if reader == "chpasswd" else None
    for w in here:
        _mask_word(scan, w, delimiter)
    if not piped:
        return
    for w in commands[index - 1][0][1 : 1 + MAX_ARGS]:
        if scan.raw[w.start] == "-" and w.end - w.start <= 3:
            continue  # echo -n, -e, -ne
        _mask_word(scan, w, delimiter)


def _mask_word(scan: Scan, w: Word, delimiter: str | None) -> None:
    if delimiter is not None:
        take_after(scan, w, delimiter)
    else:
        take(scan, w.start)

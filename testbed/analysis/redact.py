"""Secret redaction for recorded commands and their output.

Contract: `redact(text)` returns a `RedactionResult` whose `text` has every recognised
secret replaced by `[REDACTED:kind]`, `count` the number of replacements and `kinds` the
sorted unique kinds. It never raises and is idempotent: `redact(redact(t).text).text ==
redact(t).text` and the second pass counts 0. Only the secret itself is replaced; the
key, user name, header name or surrounding line stays, so output stays readable.

Kinds and what they match:

- private_key: a PEM/OpenSSH/PGP private key block, `-----BEGIN … PRIVATE KEY-----` to its
  END line, or — when truncated — to the last base64 line
- jwt: `eyJ….eyJ….sig` JSON web tokens
- github_token: `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` + 36 chars, `github_pat_…`
- gitlab_token: `glpat-…`
- slack_token: `xoxb-`/`xoxp-`/`xoxa-`/`xoxr-`/`xoxs-…`
- api_key: `sk-…` (OpenAI/Anthropic style, ≥20 chars with letters and digits), Google
  `AIza…`, `npm_…`, `hf_…`
- aws_access_key: `AKIA`/`ASIA`/… + 16 upper-case alphanumerics
- aws_secret_key: the value of `aws_secret_access_key`/`AWS_SECRET_ACCESS_KEY`
- url_credentials: the password in `scheme://user:password@host`
- bearer_token: the credential after `Authorization: Bearer/Basic/Token`, or after a bare
  `Bearer `
- password_hash: crypt(3) hashes as in /etc/shadow: `$1$`, `$2b$`, `$5$`, `$6$`, `$y$`,
  `$gy$`, `$7$` …
- password: the value of a key ending in password/passwd/secret/token/api_key/access_key/…
  (`password=…`, `PASSWORD: …`, `"db_password": "…"`, `--password …`), mysql `-pSECRET`,
  `IDENTIFIED BY '…'`, `WITH PASSWORD '…'`, `sshpass -p …`, `curl -u user:pw`, `echo 'u:pw'
  | chpasswd`, `echo pw | passwd --stdin`

Where a secret ends: a quoted one at its closing quote (whatever it holds: `'ab&cd'`,
`"a;b|c"`); an unquoted one at the end of its word, a single `&`, `;` or `|` inside the
word belonging to it (`mysql -pS3cr&t99`, `PASSWORD=ab&cd`, `curl -u user:pa&ss`) unless
the next field or command follows it (`?password=pw&next=1`, `Password=pw;Database=db`,
`PASSWORD=pw;echo u:pw2 | chpasswd`); `&&`, `||`, `;;`, a trailing operator, a space and
the closing quote of an enclosing string (`echo 'PASSWORD=pw' | tee f`) end it. Key/value
secrets also end at `,`, `)`, `}` and `]`.

Not redacted (false-positive traps): hex digests, UUIDs, PAM lines (`password required
pam_unix.so`), `PasswordAuthentication no`, prompts (`Password:`), values that are
variable references (`$PASS`, `${PASS}`), booleans and `required/optional`, public
certificates and public keys, paths given as `--password-file`.

Cost: text without any candidate (most command output) is rejected by a few dozen
substring searches of its lower-cased copy, about 20 times faster than running the
patterns; otherwise only the patterns whose key words occur run (see "how the patterns
are run" below).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_NOT_REDACTED = r"(?!\[REDACTED:)"


@dataclass(frozen=True)
class RedactionResult:
    """Redacted text, number of replacements, sorted unique kinds replaced."""

    text: str
    count: int
    kinds: tuple[str, ...]


def tag(kind: str) -> str:
    """The replacement marker for `kind`."""
    return f"[REDACTED:{kind}]"


_Replacer = Callable[[re.Match[str]], str | None]
"""Returns the replacement for a match, or None to leave it alone."""


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    group: int = 0  # the group holding the secret (0 = whole match)
    accept: Callable[[str], bool] | None = None


_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END \1-----|(?:\r?\n[A-Za-z0-9+/=:,\- ]*)*)",
    re.DOTALL,
)
_BORING_VALUES = frozenset(
    {
        "",
        "true",
        "false",
        "yes",
        "no",
        "none",
        "null",
        "nil",
        "required",
        "optional",
        "sufficient",
        "requisite",
        "include",
        "substack",
        "prompt",
        "empty",
        "changeme?",
        "******",
        "x",
        "*",
        "!",
        "!!",
        "***",
    }
)
_SECRET_KEY = (
    r"[\w.-]*?(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey"
    r"|access[_-]?key|secret[_-]?key|private[_-]?key|auth[_-]?key|client[_-]?secret"
    r"|credentials?)"
)
_JOIN = r"[&;|](?![A-Za-z_][\w.-]*(?:[ \t]*[=:]|[ \t]+[\"'])|\[REDACTED:|(?:echo|printf|curl|sshpass|mysql|mariadb)\b)"
"""A single `&`, `;` or `|` inside an unquoted value or shell word (`S3cr&t99`), unless the
next field (`&user=…`, `;Database=…`), a marker or a command a later pattern needs
(`;echo u:pw | chpasswd`) follows it."""
_PLAIN = r"[^\s\"',;&|)}\]]"
_VALUE = r"(?:\"([^\"\n]*)\"|'([^'\n]*)'|(" + _PLAIN + "+(?:" + _JOIN + _PLAIN + "+)*))"
"""A value: double- or single-quoted (to the closing quote), or unquoted: to the end of the
word (see `_JOIN`); `&&`, `||`, `;;`, an operator before a space, a quote or the end, and
`,`, `)`, `}`, `]` end it (`?user=a&password=b&next=1`, `Password=b;Database=d`)."""
_WORD = r"[^\s\"'&;|]+(?:" + _JOIN + r"[^\s\"'&;|]+)*"
"""An unquoted shell word: to the next space or quote (see `_JOIN`)."""


_FILLER = re.compile(r"\*+|x+|\.+|-+")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[A-Za-z]")


def _plausible_secret(value: str) -> bool:
    v = value.strip()
    if v.lower() in _BORING_VALUES or v.startswith(("$", "%(", "{{", "<", "[REDACTED:")):
        return False
    return not _FILLER.fullmatch(v)


def _token_like(value: str) -> bool:
    return bool(_DIGIT.search(value)) and bool(_LETTER.search(value))


_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}")),
    _Pattern("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    _Pattern("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    _Pattern("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    _Pattern("api_key", re.compile(r"(?<![\w-])sk-[A-Za-z0-9_-]{20,}"), accept=_token_like),
    _Pattern("api_key", re.compile(r"\b(?:AIza[0-9A-Za-z_-]{35}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,})")),
    _Pattern("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|AGPA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    _Pattern(
        "password_hash", re.compile(r"\$(?:1|2[abxy]?|5|6|7|y|gy|sha1|md5|apr1)\$(?:[^\s:$]+\$){1,3}[./A-Za-z0-9]{16,}")
    ),
    _Pattern(
        "url_credentials",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:" + _NOT_REDACTED + r"([^\s@/]+)@"),
        group=1,
    ),
    _Pattern(
        "bearer_token",
        re.compile(
            r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest|apikey)?\s*"
            + _NOT_REDACTED
            + r"([A-Za-z0-9._~+/=:-]{8,})"
        ),
        group=1,
    ),
    _Pattern("bearer_token", re.compile(r"\bBearer\s+" + _NOT_REDACTED + r"([A-Za-z0-9._~+/=-]{16,})"), group=1),
)

_KEY_VALUE = re.compile(
    r"(?i)(?<![\w-])([\"']?)(" + _SECRET_KEY + r")\1([ \t]*(?:=|:(?!:))[ \t]*|[ \t]+(?=[\"']))" + _NOT_REDACTED + _VALUE
)
_LONG_OPTION = re.compile(
    r"(?i)(?<![\w-])(--[\w-]*(?:password|passwd|passphrase|secret|token|api-key|apikey))"
    r"(=|[ \t]+)" + _NOT_REDACTED + _VALUE
)
_SQL = re.compile(
    r"(?i)(\bIDENTIFIED(?:\s+WITH\s+\w+)?\s+BY\s*|\bWITH\s+(?:ENCRYPTED\s+)?"
    r"PASSWORD\s*|(?<![\w\"'])PASSWORD(?:\s*=\s*|\s+|\s*\(\s*))(['\"])" + _NOT_REDACTED + r"((?:(?!\2)[^\n])*)\2"
)
_MYSQL_P = re.compile(r"(?<=\s)-p" + _NOT_REDACTED + r"((?:\"[^\"\n]+\"|'[^'\n]+')[^\s\"'&;|]*|" + _WORD + ")")
"""mysql `-pSECRET`: quoted (with what the shell glues to it: `-p'a b'c`) or a shell word."""
_MYSQL_LINE = re.compile(r"\b(mysql\w*|mariadb\w*)\b")
_SSHPASS = re.compile(r"\bsshpass\s+-p\s*" + _NOT_REDACTED + _VALUE)
_NR = _NOT_REDACTED
_CURL_USER = re.compile(
    rf"(?i)\b(curl\b[^\n]*?\s)(-u|--user)\s*"
    rf"(?:\"([^\s:\"]+):{_NR}([^\"\n]+)\"|'([^\s:']+):{_NR}([^'\n]+)'|([^\s:\"']+):{_NR}({_WORD}))"
)
"""`curl -u user:password`: the password groups are 4 ("…"), 6 ('…') and 8 (unquoted)."""
_CHPASSWD = re.compile(
    rf"\b(echo|printf)\s+(?:\"([\w.-]+):{_NR}([^\"\n]+)\"|'([\w.-]+):{_NR}([^'\n]+)'|([\w.-]+):{_NR}([^\s\"']+))"
    r"(\s*\|\s*(?:sudo\s+)?chpasswd)"
)
"""`echo 'user:password' | chpasswd`: the password groups are 3 ("…"), 5 ('…') and 7 (unquoted)."""
_PASSWD_STDIN = re.compile(
    rf"\b(echo|printf)\s+(?:\"{_NR}([^\"\n]+)\"|'{_NR}([^'\n]+)'|{_NR}([^\s\"']+))"
    r"(\s*\|\s*(?:sudo\s+)?passwd\s+--stdin)"
)
"""`echo password | passwd --stdin`: the password groups are 2 ("…"), 3 ('…') and 4 (unquoted)."""


class _Counter:
    def __init__(self) -> None:
        self.count = 0
        self.kinds: set[str] = set()

    def mark(self, kind: str) -> str:
        self.count += 1
        self.kinds.add(kind)
        return tag(kind)


def _sub_group(m: re.Match[str], group: int, replacement: str) -> str:
    whole = m.group(0)
    start, end = m.start(group) - m.start(0), m.end(group) - m.start(0)
    return whole[:start] + replacement + whole[end:]


def _value_group(m: re.Match[str], first: int) -> int:
    """Index of the alternative of `_VALUE` (3 groups from `first`) that matched."""
    for g in (first, first + 1, first + 2):
        if m.group(g) is not None:
            return g
    return first + 2


# --- how the patterns are run -----------------------------------------------------------------
#
# `redact` runs the stages of `_STAGES` in order, each on the text the previous ones left,
# exactly as if every pattern ran over the whole text, but skips the work that cannot find
# anything:
#
# - Gates. A stage runs only when each group of its `needs` has a member that is a substring
#   of the text (or, for the case-insensitive patterns, of its folded copy, see `_fold`).
#   Every gate is a necessary condition of its pattern matching anywhere.
# - Precheck. Before any gate, one pass of substring searches for `_PRECHECK` (the members
#   of all first gate groups, folded) decides that no stage can run: the common case
#   (ordinary command output) costs one lower() and these searches, nothing else.
# - Anchored scans. The two slowest patterns (`_KEY_VALUE`, `_LONG_OPTION`) can only
#   start a match a few characters before an occurrence of a key word: they are tried
#   (`regex.match(text, pos)`) at those positions only, with `re.sub`'s semantics (leftmost
#   matches, no overlaps). The mysql `-p` pattern only runs on lines naming mysql/mariadb.
#
# Markers already in the text (`[REDACTED:password]` ...) are blanked in the folded copy:
# their words ("password", "token", "key") can never be part of a match.

# Characters that a case-insensitive pattern matches as an ASCII letter although lower()
# does not give that letter (re's case equivalences): they are folded first, so that gates
# on the folded text never miss (and str.lower() never lengthens the text: U+0130).
_FOLD_FIXES = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
_FOLD_CHARS = tuple(map(chr, _FOLD_FIXES))
_MARKER = re.compile(r"\[REDACTED:\w*\]")


def _blank(m: re.Match[str]) -> str:
    return "\0" * (m.end() - m.start())


def _fold(text: str) -> str:
    """`text` lower-cased for the gates: same length, re's extra case equivalences of ASCII
    letters folded too, `[REDACTED:kind]` markers blanked."""
    if "[REDACTED:" in text:
        text = _MARKER.sub(_blank, text)
    if text.isascii() or not any(map(text.__contains__, _FOLD_CHARS)):
        return text.lower()
    return text.translate(_FOLD_FIXES).lower()


def _occurrences(hay: str, needles: tuple[str, ...]) -> list[int]:
    """Sorted start positions of every occurrence of every needle in `hay`."""
    found: set[int] = set()
    for needle in needles:
        i = hay.find(needle)
        while i >= 0:
            found.add(i)
            i = hay.find(needle, i + 1)
    return sorted(found)


def _is_key_char(c: str) -> bool:
    r"""`[\w.-]` (re's Unicode `\w` is exactly str.isalnum() or "_")."""
    return c.isalnum() or c in "_.-"


def _run_starts(text: str, words: list[int], member: Callable[[str], bool]) -> list[int]:
    """For each key word position (ascending), where the run of `member` characters holding
    it begins. A run holding the previous word is not walked again."""
    runs: list[int] = []
    prev_word, prev_run = -1, -1
    for j in words:
        r = j
        while r > 0:
            if r == prev_word:  # the previous word is in this run: so is its run's start
                r = prev_run
                break
            if not member(text[r - 1]):
                break
            r -= 1
        runs.append(r)
        prev_word, prev_run = j, r
    return runs


def _is_option_char(c: str) -> bool:
    return c.isalnum() or c in "_-"


def _key_starts(text: str, words: list[int]) -> list[int]:
    r"""Where a `_KEY_VALUE` match can start, given the positions of its key words: the key
    is `[\w.-]*?WORD` preceded by no `[\w-]` (and perhaps by a quote), so it starts at the
    beginning of the `[\w.-]` run holding the word, after a `.` inside it, or at a quote
    just before it."""
    starts: set[int] = set()
    prev_word = -1
    for j, r in zip(words, _run_starts(text, words, _is_key_char), strict=True):
        starts.add(r)
        if r > 0 and text[r - 1] in "\"'":
            starts.add(r - 1)
        q = text.find(".", max(r, prev_word), j)
        while q >= 0:
            starts.add(q + 1)
            q = text.find(".", q + 1, j)
        prev_word = j
    return sorted(starts)


def _option_starts(text: str, words: list[int]) -> list[int]:
    r"""Where a `_LONG_OPTION` match can start: at the `--` beginning the `[\w-]` run that
    holds the key word (the look-behind allows no other place)."""
    return sorted({r for r in _run_starts(text, words, _is_option_char) if text.startswith("--", r)})


def _sub_at(regex: re.Pattern[str], text: str, starts: list[int], repl: Callable[[re.Match[str]], str]) -> str:
    """`regex.sub(repl, text)` when matches can only start at `starts` (sorted)."""
    parts: list[str] = []
    last = 0
    for pos in starts:
        if pos < last:
            continue
        m = regex.match(text, pos)
        if m is None:
            continue
        parts.append(text[last:pos])
        parts.append(repl(m))
        last = m.end()
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def _line_spans(hay: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    """Sorted (start, end) of the lines of `hay` containing some of `needles`."""
    spans: set[tuple[int, int]] = set()
    for needle in needles:
        i = hay.find(needle)
        while i >= 0:
            start = hay.rfind("\n", 0, i) + 1
            end = hay.find("\n", i)
            if end < 0:
                end = len(hay)
            spans.add((start, end))
            i = hay.find(needle, end)
    return sorted(spans)


_Run = Callable[[str, str, "_Counter"], str]
"""A stage's work: (text, the text its gate searched, counter) -> new text."""


@dataclass(frozen=True)
class _Stage:
    name: str
    needs: tuple[tuple[str, ...], ...]
    """Gate: every group needs one member in the text (folded if `fold`)."""
    run: _Run
    fold: bool = False


def _pattern_stage(pat: _Pattern, *needs: tuple[str, ...], fold: bool = False) -> _Stage:
    def run(text: str, hay: str, counter: _Counter) -> str:
        def repl(m: re.Match[str]) -> str:
            secret = m.group(pat.group)
            if secret.startswith("[REDACTED:") or (pat.accept and not pat.accept(secret)):
                return m.group(0)
            return _sub_group(m, pat.group, counter.mark(pat.kind))

        return pat.regex.sub(repl, text)

    return _Stage(pat.kind, needs, run, fold)


def _password_repl(counter: _Counter, *groups: int) -> Callable[[re.Match[str]], str]:
    """Marks the first of `groups` that took part in the match as a password (if plausible)."""

    def repl(m: re.Match[str]) -> str:
        for group in groups:
            value = m.group(group)
            if value is not None:
                if not _plausible_secret(value.strip("'\"")):
                    return m.group(0)
                return _sub_group(m, group, counter.mark("password"))
        return m.group(0)

    return repl


def _run_pem(text: str, hay: str, counter: _Counter) -> str:
    return _PEM.sub(lambda m: counter.mark("private_key"), text)


# Gate members (folded) for the key words of `_SECRET_KEY` and of `_LONG_OPTION`.
_KEY_WORDS = (
    "passw", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "access_key", "access-key",
    "accesskey", "private_key", "private-key", "privatekey", "auth_key", "auth-key", "authkey", "credential",
)  # fmt: skip
_OPTION_WORDS = ("passw", "passphrase", "secret", "token", "api-key", "apikey")


def _run_key_values(text: str, hay: str, counter: _Counter) -> str:
    def repl(m: re.Match[str]) -> str:
        g = _value_group(m, 4)
        value = m.group(g)
        if not _plausible_secret(value):
            return m.group(0)
        key = m.group(2).lower()
        if key in ("passwd", "shadow") and ":" in m.group(3):
            return m.group(0)  # nsswitch.conf `passwd: files systemd`
        kind = "aws_secret_key" if "aws" in key or "secret_access" in key else "password"
        return _sub_group(m, g, counter.mark(kind))

    return _sub_at(_KEY_VALUE, text, _key_starts(text, _occurrences(hay, _KEY_WORDS)), repl)


def _run_long_options(text: str, hay: str, counter: _Counter) -> str:
    def repl(m: re.Match[str]) -> str:
        g = _value_group(m, 3)
        value = m.group(g)
        if not _plausible_secret(value) or value.startswith("-"):
            return m.group(0)
        return _sub_group(m, g, counter.mark("password"))

    return _sub_at(_LONG_OPTION, text, _option_starts(text, _occurrences(hay, _OPTION_WORDS)), repl)


def _simple(regex: re.Pattern[str], *groups: int) -> _Run:
    def run(text: str, hay: str, counter: _Counter) -> str:
        return regex.sub(_password_repl(counter, *groups), text)

    return run


def _run_mysql(text: str, hay: str, counter: _Counter) -> str:
    repl = _password_repl(counter, 1)
    if "\n" not in text:
        return _MYSQL_P.sub(repl, text) if _MYSQL_LINE.search(text) else text
    parts: list[str] = []
    prev = 0
    for start, end in _line_spans(text, ("mysql", "mariadb")):
        line = text[start:end]
        if _MYSQL_LINE.search(line):  # a line of its own: `(?<=\s)` never sees the newline
            parts += (text[prev:start], _MYSQL_P.sub(repl, line))
            prev = end
    parts.append(text[prev:])
    return "".join(parts)


_AWS_PREFIXES = ("AKIA", "ASIA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "AGPA", "ABIA", "ACCA")

_STAGES: tuple[_Stage, ...] = (
    _Stage("private_key", (("PRIVATE KEY",),), _run_pem),
    _pattern_stage(_PATTERNS[0], ("eyJ",)),
    _pattern_stage(_PATTERNS[1], ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _pattern_stage(_PATTERNS[2], ("glpat-",)),
    _pattern_stage(_PATTERNS[3], ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-")),
    _pattern_stage(_PATTERNS[4], ("sk-",)),
    _pattern_stage(_PATTERNS[5], ("AIza", "npm_", "hf_")),
    _pattern_stage(_PATTERNS[6], _AWS_PREFIXES),
    _pattern_stage(_PATTERNS[7], ("$",)),
    _pattern_stage(_PATTERNS[8], ("://",), ("@",)),
    _pattern_stage(_PATTERNS[9], ("authorization",), fold=True),
    _pattern_stage(_PATTERNS[10], ("Bearer",)),
    _Stage("key_value", (_KEY_WORDS,), _run_key_values, fold=True),
    _Stage("long_option", (_OPTION_WORDS, ("--",)), _run_long_options, fold=True),
    _Stage("sql", (("identified", "password"), ("'", '"')), _simple(_SQL, 3), fold=True),
    _Stage("sshpass", (("sshpass",),), _simple(_SSHPASS, 1, 2, 3)),
    _Stage("curl", (("curl",), ("-u",)), _simple(_CURL_USER, 4, 6, 8), fold=True),
    _Stage("chpasswd", (("chpasswd",), ("echo", "printf")), _simple(_CHPASSWD, 3, 5, 7)),
    _Stage("passwd_stdin", (("--stdin",), ("echo", "printf")), _simple(_PASSWD_STDIN, 2, 3, 4)),
    _Stage("mysql", (("mysql", "mariadb"), ("-p",)), _run_mysql),
)


def _precheck_needles() -> tuple[str, ...]:
    """Substrings of which the folded text must contain one for any stage to run: every
    stage's first gate group, folded ("pass" and "xox" standing for the longer members
    containing them; a member containing another one is dropped). The AWS prefixes are
    left to `_AWS_HINT`."""
    needles = {"pass", "xox"}
    for stage in _STAGES:
        if stage.needs[0] != _AWS_PREFIXES:
            needles.update(n.lower() for n in stage.needs[0])
    return tuple(sorted(n for n in needles if not any(o != n and o in n for o in needles)))


_PRECHECK = _precheck_needles()
_AWS_HINT = re.compile("A(?:" + "|".join(p[1:] for p in _AWS_PREFIXES) + ")")
"""The AWS prefixes as one regex with a literal first character (a fast search)."""
_AWS = "\0aws"
"""Stands for a match of `_AWS_HINT` among the precheck needles found."""
_STAGE_NEEDLES: tuple[frozenset[str], ...] = tuple(
    frozenset({_AWS})
    if stage.needs[0] == _AWS_PREFIXES
    else frozenset(n for n in _PRECHECK for member in stage.needs[0] if n in member.lower())
    for stage in _STAGES
)
"""Per stage: the precheck needles of which one is in the folded text when its first gate
group has a member in the text (markers hold none of the case-sensitive members)."""


def redact(text: str) -> RedactionResult:
    """Replace secrets in `text` with `[REDACTED:kind]` markers. Never raises; idempotent."""
    if not isinstance(text, str) or not text:
        return RedactionResult(text if isinstance(text, str) else "", 0, ())
    folded = _fold(text)
    found = set(filter(folded.__contains__, _PRECHECK))
    if _AWS_HINT.search(text):
        found.add(_AWS)
    if not found:
        return RedactionResult(text, 0, ())  # the common case: no stage can match
    counter = _Counter()
    out = text
    for stage, needles in zip(_STAGES, _STAGE_NEEDLES, strict=True):
        if needles.isdisjoint(found):
            continue
        hay = folded if stage.fold else out
        if not all(any(map(hay.__contains__, group)) for group in stage.needs):
            continue
        before = counter.count
        out = stage.run(out, hay, counter)
        if counter.count != before:
            folded = _fold(out)
    if not counter.count:
        return RedactionResult(text, 0, ())
    return RedactionResult(out, counter.count, tuple(sorted(counter.kinds)))

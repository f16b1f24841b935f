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

Not redacted (false-positive traps): hex digests, UUIDs, PAM lines (`password required
pam_unix.so`), `PasswordAuthentication no`, prompts (`Password:`), values that are
variable references (`$PASS`, `${PASS}`), booleans and `required/optional`, public
certificates and public keys, paths given as `--password-file`.
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
_VALUE = r"(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"',;&|)}\]]+))"


def _plausible_secret(value: str) -> bool:
    v = value.strip()
    if v.lower() in _BORING_VALUES or v.startswith(("$", "%(", "{{", "<", "[REDACTED:")):
        return False
    return not re.fullmatch(r"\*+|x+|\.+|-+", v)


def _token_like(value: str) -> bool:
    return bool(re.search(r"\d", value)) and bool(re.search(r"[A-Za-z]", value))


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
    r"PASSWORD\s*|(?<![\w\"'])PASSWORD(?:\s*=\s*|\s+|\s*\(\s*))(['\"])" + _NOT_REDACTED + r"([^'\"\n]*)\2"
)
_MYSQL_P = re.compile(r"(?<=\s)-p" + _NOT_REDACTED + r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s'\"]+)")
_MYSQL_LINE = re.compile(r"\b(mysql\w*|mariadb\w*)\b")
_SSHPASS = re.compile(r"\bsshpass\s+-p\s*" + _NOT_REDACTED + _VALUE)
_CURL_USER = re.compile(
    r"(?i)\b(curl\b[^\n]*?\s)(-u|--user)\s*([\"']?)([^\s:\"']+):" + _NOT_REDACTED + r"([^\s\"']+)\3"
)
_CHPASSWD = re.compile(
    r"\b(echo|printf)\s+([\"']?)([\w.-]+):" + _NOT_REDACTED + r"([^\s\"']+)\2(\s*\|\s*(?:sudo\s+)?chpasswd)"
)
_PASSWD_STDIN = re.compile(
    r"\b(echo|printf)\s+([\"']?)" + _NOT_REDACTED + r"([^\s\"']+)\2(\s*\|\s*(?:sudo\s+)?passwd\s+--stdin)"
)


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


def _apply(text: str, pat: _Pattern, counter: _Counter) -> str:
    def repl(m: re.Match[str]) -> str:
        secret = m.group(pat.group)
        if secret.startswith("[REDACTED:") or (pat.accept and not pat.accept(secret)):
            return m.group(0)
        return _sub_group(m, pat.group, counter.mark(pat.kind))

    return pat.regex.sub(repl, text)


def _value_group(m: re.Match[str], first: int) -> int:
    """Index of the alternative of `_VALUE` (3 groups from `first`) that matched."""
    for g in (first, first + 1, first + 2):
        if m.group(g) is not None:
            return g
    return first + 2


def _key_values(text: str, counter: _Counter) -> str:
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

    def repl_opt(m: re.Match[str]) -> str:
        g = _value_group(m, 3)
        value = m.group(g)
        if not _plausible_secret(value) or value.startswith("-"):
            return m.group(0)
        return _sub_group(m, g, counter.mark("password"))

    return _LONG_OPTION.sub(repl_opt, _KEY_VALUE.sub(repl, text))


def _commands(text: str, counter: _Counter) -> str:
    def group_repl(group: int) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            value = m.group(group)
            if value is None or not _plausible_secret(value.strip("'\"")):
                return m.group(0)
            return _sub_group(m, group, counter.mark("password"))

        return repl

    text = _SQL.sub(group_repl(3), text)
    text = _SSHPASS.sub(lambda m: group_repl(_value_group(m, 1))(m), text)
    text = _CURL_USER.sub(group_repl(5), text)
    text = _CHPASSWD.sub(group_repl(4), text)
    text = _PASSWD_STDIN.sub(group_repl(3), text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _MYSQL_LINE.search(line):
            lines[i] = _MYSQL_P.sub(group_repl(1), line)
    return "\n".join(lines)


def redact(text: str) -> RedactionResult:
    """Replace secrets in `text` with `[REDACTED:kind]` markers. Never raises; idempotent."""
    if not isinstance(text, str) or not text:
        return RedactionResult(text if isinstance(text, str) else "", 0, ())
    counter = _Counter()
    out = _PEM.sub(lambda m: counter.mark("private_key"), text)
    for pat in _PATTERNS:
        out = _apply(out, pat, counter)
    out = _key_values(out, counter)
    out = _commands(out, counter)
    return RedactionResult(out, counter.count, tuple(sorted(counter.kinds)))

"""Secrets given as the value of something named: keys, options, headers, URLs, SQL.

Kinds: `password` (and `aws_secret_key`, `azure_key`, `gcp_key` where the key says so, see
`keys`), `bearer_token`, `url_credentials`.

- Key/value: a secret key (`keys.key_info`), optionally quoted, then `=`, `=>`, `:` (not
  `::`), `:=`, or blanks before a quoted value (`PASSWORD 'x'`, SQL), or blanks before any
  value when the key is an option (`--db-password X`, `-storepass X`; not a value starting
  with `-`) or a Dockerfile `ENV`. A quoted key also takes `, 'value'` (PHP `define`) and
  ` value="…"` (.NET `<add key="DbPassword" value="…"/>`); `<password>…</password>` too.
  JSON inside JSON (`\\"password\\": \\"x\\"`) is read like JSON. Not taken: `passwd:`,
  `shadow:`, `group:` (nsswitch.conf), `BAD PASSWORD: …` (pwquality), and every value
  `values.plausible` refuses.
- Headers: the credential after `Authorization:` / `Proxy-Authorization:` (and their JSON
  and `=` forms), after its scheme (`Bearer`, `Basic`, `Token`, …; `Digest` and other
  parameter lists to the end of the line); a bare `Bearer` + 16 or more token characters.
- URLs: the password in `scheme://user:password@host` (the user may be empty:
  `redis://:pw@host`); the last `@` before the path ends it.
- `.netrc`: `password VALUE` on a line naming `machine`, `default` or `login`, or within
  two lines after one.
- SQL: `IDENTIFIED [WITH plugin] BY 'x'` (or unquoted, Oracle), `PASSWORD('x')`,
  `SET PASSWORD FOR user = 'x'`; `PASSWORD 'x'` and `PASSWORD = 'x'` are key/values.
- Redis: `requirepass VALUE`, `masterauth VALUE` (config lines, `CONFIG SET`).
- `.pgpass`: the last field of `host:port:database:user:password` (port digits or `*`).

Each rule walks the occurrences of its key words once, in order, and skips those inside the
key run or value it has just read, so each character is read a bounded number of times.
"""

from __future__ import annotations

import re

from testbed.analysis.redact.keys import STEMS, KeyInfo, key_info
from testbed.analysis.redact.scan import MARKER_PREFIX, QUOTES, Scan
from testbed.analysis.redact.values import plausible, secret_value, take_value, unquoted, value_end

RANK_NAMED = 1
"""Headers and URLs name a merged span before plain key/values."""
RANK_VALUE = 2

_KEY = re.compile(r"[\w.-]*+")
_BLANKS = re.compile(r"[ \t]*+")
_NSSWITCH = frozenset({"passwd", "shadow", "group", "gshadow"})
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def run_key_values(scan: Scan) -> None:
    """Key/value secrets (see the module contract)."""
    skip = 0
    for j, _stem in scan.hits_of(STEMS):
        if j < skip:
            continue
        start = scan.key_start(j, skip)
        end = scan.run_end(_KEY, j)
        skip = end
        option = scan.raw.rfind("--", start + 1, j)
        if option > start:  # `…B4a--password`: an option glued to what precedes it
            start = option
        info = key_info(scan.low[start:end])
        if info is not None:
            skip = max(skip, _assignment(scan, start, end, info))


def _assignment(scan: Scan, start: int, end: int, info: KeyInfo) -> int:
    """Read what follows the key `raw[start:end]`; record its value; return where reading
    stopped."""
    raw = scan.raw
    lend = scan.line_end(end)
    before = raw[start - 1] if start > 0 else ""
    i, quoted = end, False
    if before in QUOTES and raw.startswith(before, i):
        i, quoted = i + 1, True
    elif start >= 2 and raw[start - 2] == "\\" and before in QUOTES and raw.startswith("\\" + before, i):
        i, quoted = i + 2, True
    elif before == "<" and raw.startswith(">", i):
        return _xml_value(scan, i + 1, lend, info)
    blank = scan.run_end(_BLANKS, i, lend)
    pos = _value_start(scan, start, i, blank, quoted, info)
    if pos is None:
        return blank
    pos = scan.run_end(_BLANKS, pos, lend)
    if pos >= lend or (raw[start] == "-" and raw[pos] == "-"):
        return pos  # nothing, or the next option
    return _take(scan, pos, lend, info)


def _value_start(scan: Scan, start: int, i: int, blank: int, quoted: bool, info: KeyInfo) -> int | None:
    """Where the value begins after the key `raw[start:i]` (its closing quote included) and
    the blanks up to `blank`, or None if no value follows."""
    raw = scan.raw
    c = raw[blank : blank + 1]
    if c == "=":
        nxt = raw[blank + 1 : blank + 2]
        return None if nxt == "=" else blank + 1 + (nxt == ">")
    if c == ":" and raw[blank + 1 : blank + 2] != ":":
        key = scan.low[start : i - quoted]
        if not (info.colon or quoted) or (not quoted and key in _NSSWITCH):
            return None
        if scan.low[max(0, start - 4) : start] == "bad ":
            return None
        return blank + 1 + (raw[blank + 1 : blank + 2] == "=")
    if quoted and c == ",":
        after = scan.run_end(_BLANKS, blank + 1)
        return blank + 1 if raw[after : after + 1] in QUOTES else None
    if quoted and blank > i and scan.low.startswith("value=", blank):
        return blank + 6
    if blank > i and (c in QUOTES or _spaced(scan, start)):
        return blank
    if blank > i and info.kind == "aws_secret_key" and _AWS_SECRET.match(raw, blank):
        return blank  # `aws configure set aws_secret_access_key SECRET`, whatever the command
    return None


def _spaced(scan: Scan, start: int) -> bool:
    """Whether the key takes a value after blanks: an option, or a Dockerfile `ENV` key."""
    if scan.raw[start] == "-":
        return True
    line = scan.line_start(start)
    return start - line <= 8 and scan.low[line:start].strip() == "env"


def _take(scan: Scan, pos: int, lend: int, info: KeyInfo) -> int:
    stop = value_end(scan, pos, lend)
    value = scan.raw[pos:stop]
    inner = unquoted(value)
    start, end = (pos, stop) if inner is value else (pos + 1, stop - 1)
    if inner.startswith("pass:"):  # openssl's `-pass pass:SECRET`
        inner, start = inner[5:], start + 5
    if secret_value(info, inner):
        scan.add(start, end, info.kind, RANK_VALUE)
    return stop


def _xml_value(scan: Scan, pos: int, lend: int, info: KeyInfo) -> int:
    """`<password>VALUE</password>`: the text up to the next `<`."""
    close = scan.find("<", pos, lend)
    stop = close if close >= 0 else lend
    if secret_value(info, scan.raw[pos:stop]):
        scan.add(pos, stop, info.kind, RANK_VALUE)
    return stop


# --- headers ---------------------------------------------------------------------------------

_SCHEME = re.compile(r"[A-Za-z0-9-]*+")
_CREDENTIAL = re.compile(r"[A-Za-z0-9._~+/=:-]*+")
_SCHEMES = frozenset({"bearer", "basic", "token", "apikey", "api-key", "key", "otp", "sso-key", "ntlm", "negotiate"})
_PARAMETER_SCHEMES = frozenset({"digest", "aws4-hmac-sha256", "hmac", "oauth", "signature"})


def run_headers(scan: Scan) -> None:
    """Authorization credentials and bare bearer tokens (see the module contract)."""
    raw, last = scan.raw, 0
    for j in scan.hits("authorization"):
        if j < last:
            continue
        lend = scan.line_end(j)
        i = j + len("authorization")
        i += raw[i : i + 1] in QUOTES
        i = scan.run_end(_BLANKS, i, lend)
        if raw[i : i + 1] not in (":", "="):
            continue
        v = scan.run_end(_BLANKS, i + 1, lend)
        v += raw[v : v + 1] in QUOTES
        w = scan.run_end(_SCHEME, v, lend)
        scheme = scan.low[v:w]
        cred = v
        if w > v and raw[w : w + 1] in (" ", "\t") and (scheme in _SCHEMES or scheme in _PARAMETER_SCHEMES):
            cred = scan.run_end(_BLANKS, w, lend)
        if scheme in _PARAMETER_SCHEMES:
            stop = lend
            while stop > cred and raw[stop - 1] in " \t\r'\"":
                stop -= 1
            scan.ops += lend - cred
        else:
            stop = scan.run_end(_CREDENTIAL, cred, lend)
        if stop - cred >= 8 and plausible(raw[cred:stop]):
            scan.add(cred, stop, "bearer_token", RANK_NAMED)
            last = stop
    for j in scan.hits("bearer"):
        if raw[j] not in "Bb" or (j > 0 and raw[j - 1].isalnum()):
            continue
        lend = scan.line_end(j)
        cred = scan.run_end(_BLANKS, j + 6, lend)
        if cred == j + 6:
            continue
        stop = scan.run_end(_CREDENTIAL, cred, lend)
        if stop - cred >= 16 and plausible(raw[cred:stop]):
            scan.add(cred, stop, "bearer_token", RANK_NAMED)


# --- URLs ------------------------------------------------------------------------------------

_USER = re.compile(r"[^\s:/@?#\"'<>]*+")
_USERINFO = re.compile(r"[^\s/?#\"'<>]*+")


def run_urls(scan: Scan) -> None:
    """The password of `scheme://user:password@host` (see the module contract)."""
    raw = scan.raw
    if "@" not in raw:
        return
    for j in scan.hits("://"):
        if j == 0 or not raw[j - 1].isalnum():
            continue
        user_end = scan.run_end(_USER, j + 3)
        if raw[user_end : user_end + 1] != ":":
            continue
        stop = scan.run_end(_USERINFO, user_end + 1)
        at = raw.rfind("@", user_end + 1, stop)
        scan.ops += stop - user_end
        secret = raw[user_end + 1 : at] if at > 0 else ""
        if secret and not secret.startswith((MARKER_PREFIX, "$")):
            scan.add(user_end + 1, at, "url_credentials", RANK_NAMED)


# --- .netrc, SQL, Redis ----------------------------------------------------------------------

_NETRC_WORDS = ("machine ", "default ", "login ")


def run_netrc(scan: Scan) -> None:
    """`.netrc` passwords: `machine h login u password p` (see the module contract)."""
    raw = scan.raw
    context: dict[int, bool] = {}
    for j in scan.hits("password"):
        after = j + len("password")
        if (j > 0 and not raw[j - 1].isspace()) or raw[after : after + 1] not in (" ", "\t"):
            continue
        line = scan.line_start(j)
        if line not in context:
            context[line] = _netrc_context(scan, line)
        if context[line]:
            lend = scan.line_end(j)
            take_value(scan, scan.run_end(_BLANKS, after, lend), lend, "password", RANK_VALUE)


def _netrc_context(scan: Scan, line: int) -> bool:
    """Whether the line at `line`, or one of the two before it, names a netrc machine."""
    low, stop = scan.low, scan.line_end(line)
    scan.ops += stop - line
    if any(low.find(word, line, stop) >= 0 for word in _NETRC_WORDS):
        return True
    for _ in range(2):
        if line == 0:
            return False
        line = scan.line_start(line - 1)
        head = low[line : line + 40].lstrip()
        if head.startswith(_NETRC_WORDS):
            return True
    return False


_IDENTIFIED = re.compile(r"identified(?:[ \t]++with[ \t]++[\w$]{1,64}+)?[ \t]++by[ \t]*+(?:password[ \t]*+)?")
_PASSWORD_CALL = re.compile(r"password[ \t]*+\([ \t]*+(?=['\"])")
_SET_PASSWORD = re.compile(r"password[ \t]++for[ \t]++[\w'\"`@%.-]{1,200}+[ \t]*+=")
"""`SET PASSWORD FOR 'user'@'host' =`: a user spec, then `=`."""


def run_sql(scan: Scan) -> None:
    """SQL passwords (see the module contract)."""
    low = scan.low
    for j in scan.hits("identified"):
        m = _IDENTIFIED.match(low, j)
        if m is not None and (j == 0 or not low[j - 1].isalnum()):
            scan.ops += m.end() - j
            lend = scan.line_end(j)
            take_value(scan, m.end(), lend, "password", RANK_VALUE)
    for j in scan.hits("password"):
        m = _PASSWORD_CALL.match(low, j) or _SET_PASSWORD.match(low, j)
        if m is None or (j > 0 and low[j - 1].isalnum()):
            continue
        scan.ops += m.end() - j
        lend = scan.line_end(j)
        pos = m.end()
        if m.re is _SET_PASSWORD:
            if not low[max(0, j - 8) : j].rstrip().endswith("set"):
                continue
            pos = scan.run_end(_BLANKS, pos, lend)
            if low.startswith("password", pos):
                continue  # `= PASSWORD('x')`: that call is read on its own
        take_value(scan, pos, lend, "password", RANK_VALUE)


_PGPASS = re.compile(r"(?<![^\s'\"])[^:\s'\"]++:(?:\d{1,5}+|\*):[^:\s'\"]++:[^:\s'\"]++:([^\s'\"]++)")
PGPASS_NEEDLES = (":5432:", ":*:", "pgpass")


def run_pgpass(scan: Scan) -> None:
    """`.pgpass` lines: `host:port:database:user:password` (port digits or `*`)."""
    seen: set[int] = set()
    for needle in PGPASS_NEEDLES:
        for j in scan.hits(needle):
            line = scan.line_start(j)
            if line in seen:
                continue
            seen.add(line)
            stop = scan.line_end(j)
            scan.ops += stop - line
            for m in _PGPASS.finditer(scan.raw, line, stop):
                if plausible(m.group(1)) and not m.group(1).startswith(MARKER_PREFIX):
                    scan.add(m.start(1), m.end(1), "password", RANK_VALUE)


def run_directives(scan: Scan) -> None:
    """Redis `requirepass VALUE` and `masterauth VALUE`."""
    raw = scan.raw
    for word in ("requirepass", "masterauth"):
        for j in scan.hits(word):
            after = j + len(word)
            if (j > 0 and (raw[j - 1].isalnum() or raw[j - 1] in "_-")) or raw[after : after + 1] not in (" ", "\t"):
                continue
            lend = scan.line_end(j)
            take_value(scan, scan.run_end(_BLANKS, after, lend), lend, "password", RANK_VALUE)

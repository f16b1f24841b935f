"""Secret redaction: the one redactor for every text testbed stores or shows.

Contract:

- `redact(text)` returns a `RedactionResult`: `text` with every recognised secret replaced
  by `[REDACTED:kind]`, `count` the number of replacements, `kinds` the sorted unique kinds.
  It never raises, never redacts inside a marker already in the text, and replaces only
  the secret: the key, option, user name, header name, quotes and the rest of the line
  stay, so the output stays readable. It is idempotent on text whose secrets stand apart
  from what follows them, as in every form of the corpus (`redact(redact(t).text)` changes
  nothing); where a secret is glued to the next key or command (`ghp_…--password x`), a
  second pass can mask a little more, never less.
- `Redactor` is what the layers that store text are handed (the run recorder, the export):
  `text(value, kinds)` is `redact(value).text`, adding the kinds found to `kinds`;
  `json(value, kinds)` is `redact_json`. It memoises the results of short texts (at most
  `CACHE_MAX_CHARS` characters, at most `CACHE_ENTRIES` of them: a full memo starts afresh):
  `redact` is a pure function and command texts repeat a lot, so the memo changes speed,
  never results.
- `redact_json(value, kinds)` returns a copy of a JSON value with every string redacted
  (keys too) and, beyond that, the whole string value of every key that names a secret
  (`{"password": "x"}`, `{"private_key_id": "…"}`, see `keys`); the kinds found are added
  to `kinds`. The structure is kept, so the JSON stays valid.
- Time is linear in the length of the text, adversarial text included (`engine`,
  `Scan.ops`; `benchmarks/redact.py` measures it). Text that holds no key word costs one
  Aho-Corasick pass.

What is recognised, by module:

- `tokens`: formats — private key blocks (PEM of every key type, PGP, PuTTY), GitHub,
  GitLab, Slack, Stripe, Vault (`hvs.`, legacy `s.`), OpenAI/Anthropic `sk-`, Google
  `AIza`/`ya29.`/`GOCSPX-`, npm, Hugging Face, PyPI, Docker Hub, DigitalOcean, Shopify,
  Grafana, age keys, AWS access key ids and the secret key after one, Azure client
  secrets, JSON web tokens, password hashes (crypt(3), `{SSHA}`, pbkdf2, MySQL).
- `assign`: values of secret keys (`PASSWORD=…`, `"db_password": "…"`, `MYSQL_PWD=`,
  `*_PASS=`, `*_TOKEN=`, `*_SECRET=`, `AccountKey=`, `private_key_id`, `--password …`,
  `-storepass …`, `<password>…</password>`), `Authorization:` credentials and bearer
  tokens, `scheme://user:password@host`, `.netrc` lines, SQL `IDENTIFIED BY`/`PASSWORD`,
  Redis `requirepass`/`masterauth`.
- `argv`: command arguments — `mysql -pX`, `htpasswd -b F U X`, `openssl … pass:X`/`-k X`,
  `redis-cli -a X`, `docker login -p X`, `sshpass -p X`, `curl -u u:X`, `echo u:X |
  chpasswd`, `echo X | passwd --stdin`, `sudo -S`, `--password-stdin`, and more.

Not redacted (false-positive traps, see the unit tests' corpus): hex digests, git SHAs,
UUIDs, docker image digests, PAM lines, `PasswordAuthentication no`, prompts (`Password:`),
`passwd: password updated successfully`, prose (`password policy updated`), variable
references (`$PASS`, `${PASS}`), templates, booleans, public certificates and keys, paths
given as `--password-file`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

from testbed.analysis.redact.engine import analyse, rebuild, work
from testbed.analysis.redact.keys import key_info
from testbed.analysis.redact.scan import MARKER_PREFIX, tag
from testbed.analysis.redact.values import secret_value

__all__ = ["CACHE_ENTRIES", "CACHE_MAX_CHARS", "RedactionResult", "Redactor", "redact", "redact_json", "tag", "work"]

CACHE_MAX_CHARS = 512
CACHE_ENTRIES = 50_000

_KEY = re.compile(r"[\w.-]+")


@dataclass(frozen=True)
class RedactionResult:
    """Redacted text, number of replacements, sorted unique kinds replaced."""

    text: str
    count: int
    kinds: tuple[str, ...]


def redact(text: str) -> RedactionResult:
    """Replace secrets in `text` with `[REDACTED:kind]` markers. Never raises; idempotent."""
    if not isinstance(text, str) or not text:
        return RedactionResult(text if isinstance(text, str) else "", 0, ())
    scan = analyse(text)
    if scan is None or not scan.spans:
        return RedactionResult(text, 0, ())
    out, count, kinds = rebuild(scan)
    return RedactionResult(out, count, kinds)


class Redactor:
    """`redact` and `redact_json` with a memo of short texts (see the module contract)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[str, tuple[str, ...]]] = {}

    @overload
    def text(self, value: str, kinds: set[str]) -> str: ...

    @overload
    def text(self, value: None, kinds: set[str]) -> None: ...

    def text(self, value: str | None, kinds: set[str]) -> str | None:
        """`value` with its secrets replaced; the kinds replaced are added to `kinds`."""
        if not value:
            return value
        entry = self._cache.get(value)
        if entry is None:
            scan = analyse(value)
            if scan is None or not scan.spans:
                entry = (value, ())
            else:
                out, _, found = rebuild(scan)
                entry = (out, found)
            if len(value) <= CACHE_MAX_CHARS:
                if len(self._cache) >= CACHE_ENTRIES:
                    self._cache.clear()  # bounded: start afresh rather than track recency
                self._cache[value] = entry
        if entry[1]:
            kinds.update(entry[1])
        return entry[0]

    def json(self, value: Any, kinds: set[str]) -> Any:
        """A redacted copy of the JSON value `value` (see `redact_json`)."""
        return redact_json(value, kinds, self.text)


def _text(value: str, kinds: set[str]) -> str:
    result = redact(value)
    if result.count:
        kinds.update(result.kinds)
    return result.text


def redact_json(value: Any, kinds: set[str], text: Callable[[str, set[str]], str] = _text) -> Any:
    """A copy of the JSON value `value`, redacted (see the module contract); `text` redacts
    one string."""
    if isinstance(value, str):
        return text(value, kinds)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            name = text(key, kinds) if isinstance(key, str) else key
            info = key_info(key) if isinstance(key, str) and isinstance(item, str) and _KEY.fullmatch(key) else None
            if info is not None and secret_value(info, item) and MARKER_PREFIX not in item:
                kinds.add(info.kind)
                out[name] = tag(info.kind)
            else:
                out[name] = redact_json(item, kinds, text)
        return out
    if isinstance(value, list | tuple):
        return [redact_json(item, kinds, text) for item in value]
    return value

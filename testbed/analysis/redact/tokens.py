"""Secrets recognised by their own format, wherever they appear.

Kinds: `private_key` (PEM/OpenSSH/PGP private key blocks, PuTTY private lines),
`github_token`, `gitlab_token`, `slack_token`, `stripe_key`, `vault_token`, `api_key` (OpenAI,
Anthropic, Google, npm, Hugging Face, PyPI, Docker Hub, DigitalOcean, Shopify, SendGrid,
Grafana, age), `aws_access_key` (AKIA/ASIA/ABIA/ACCA ids) and `aws_secret_key` (the 40
characters that follow such an id, as in credential CSVs), `azure_key` (client secrets
`…Q~…`), `gcp_key` (`GOCSPX-` client secrets, `ya29.` access tokens), `jwt`,
`password_hash` (crypt(3) `$id$…`, `{SSHA}…`, Django `pbkdf2_…$`, MySQL `*` + 40 hex).

Contract: a token is a literal prefix (case-sensitive) at a token boundary (the character
before it is not one the token is made of) and a body of at least `min_len` (at most
`max_len`) characters of its class; a body that runs longer than `max_len` is not that token.
Each rule finds its prefixes with `Scan.hits` and reads bodies with `Scan.run_end`; a body
never holds the next prefix's boundary, so the work is linear.

PEM blocks: from `-----BEGIN … PRIVATE KEY-----` (any key type, `… PRIVATE KEY BLOCK` for
PGP) to the matching END line, also when the block is one JSON string with `\\n` escapes;
a block with no END before the next BEGIN (cut output) is masked to its last base64 or
header line. Certificates and public keys are not secrets and stay.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from testbed.analysis.redact.scan import MARKER_PREFIX, Scan

RANK = 0
"""Specific kinds name a merged span (see `Scan.merged`)."""

_ALNUM = "A-Za-z0-9"


def _run(chars: str) -> re.Pattern[str]:
    """A possessive run of the class `chars` (a regex class body; a literal `-` comes last)."""
    return re.compile(f"[{chars}]*+")


@dataclass(frozen=True)
class TokenFormat:
    """A token: `prefix` + a body of `chars` (a regex class body), `min_len`..`max_len` long."""

    kind: str
    prefixes: tuple[str, ...]
    chars: str
    min_len: int
    max_len: int = 512
    accept: Callable[[str], bool] | None = None
    boundary: str = ""
    """Characters besides `chars` that may not precede the prefix."""

    def body(self) -> re.Pattern[str]:
        return _run(self.chars)

    def before(self) -> re.Pattern[str]:
        return re.compile(f"[{self.boundary}{self.chars}]")


def _mixed(value: str) -> bool:
    """Letters and digits (random tokens have both; words and package names do not)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _vault_legacy(value: str) -> bool:
    return _mixed(value) and any(c.isupper() for c in value) and any(c.islower() for c in value)


FORMATS: tuple[TokenFormat, ...] = (
    TokenFormat("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _ALNUM, 36, 255, boundary="_"),
    TokenFormat("github_token", ("github_pat_",), _ALNUM + "_", 22, 255),
    TokenFormat(
        "gitlab_token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glimt-", "glft-"),
        _ALNUM + "_.-",
        20,
    ),
    TokenFormat("slack_token", ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xapp-"), _ALNUM + "-", 10),
    TokenFormat("stripe_key", ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"), _ALNUM, 16, boundary="_"),
    TokenFormat("vault_token", ("hvs.", "hvb.", "hvr."), _ALNUM + "_-", 20, boundary="."),
    TokenFormat("api_key", ("sk-",), _ALNUM + "_-", 20, accept=_mixed),
    TokenFormat("api_key", ("AIza",), _ALNUM + "_-", 35, 35),
    TokenFormat("api_key", ("npm_",), _ALNUM, 36, 36, boundary="_"),
    TokenFormat("api_key", ("hf_",), _ALNUM, 30, 64, boundary="_"),
    TokenFormat("api_key", ("pypi-AgEIcHlwaS5vcmc",), _ALNUM + "_-", 50),
    TokenFormat("api_key", ("dckr_pat_",), _ALNUM + "_-", 20),
    TokenFormat("api_key", ("dop_v1_", "doo_v1_", "dor_v1_"), "a-f0-9", 64, 64, boundary="_A-Za-z"),
    TokenFormat("api_key", ("shpat_", "shpss_", "shpca_", "shppa_"), "a-fA-F0-9", 32, 32, boundary="_"),
    TokenFormat("api_key", ("glc_",), _ALNUM + "+/=", 32, boundary="_"),
    TokenFormat("api_key", ("AGE-SECRET-KEY-1",), "0-9A-Z", 58, 58),
    TokenFormat("gcp_key", ("GOCSPX-",), _ALNUM + "_-", 28, 28),
    TokenFormat("gcp_key", ("ya29.",), _ALNUM + "_-", 20, boundary="."),
    TokenFormat("aws_access_key", ("AKIA", "ASIA", "ABIA", "ACCA"), "A-Z0-9", 16, 16, boundary="a-z"),
)
"""The token formats; `hits` finds each prefix lower-cased, the rule checks its case."""

NEEDLES: tuple[str, ...] = tuple(sorted({p.lower() for f in FORMATS for p in f.prefixes}))


_COMPILED = tuple((fmt, fmt.body(), fmt.before()) for fmt in FORMATS)
_PREFIXES = frozenset(NEEDLES)


def run_formats(scan: Scan) -> None:
    """Record every token of `FORMATS` in the text."""
    raw = scan.raw
    present = scan.present(_PREFIXES)
    for fmt, body, before in _COMPILED:
        for prefix in fmt.prefixes:
            if prefix.lower() not in present:
                continue
            start = len(prefix)
            last = 0
            for j in scan.hits(prefix.lower()):
                if j < last or not raw.startswith(prefix, j) or (j > 0 and before.match(raw, j - 1)):
                    continue
                end = scan.run_end(body, j + start)
                while fmt.kind == "gitlab_token" and end > j + start and raw[end - 1] == ".":
                    end -= 1  # a sentence's full stop
                length = end - j - start
                if fmt.min_len <= length <= fmt.max_len and (fmt.accept is None or fmt.accept(raw[j + start : end])):
                    scan.add(j, end, fmt.kind, RANK)
                    last = end
                    if fmt.kind == "aws_access_key":
                        _aws_secret_after(scan, end)


_AWS_GAP = _run(" \t,;:=|\"'")
_AWS_SECRET = _run(_ALNUM + "/+")


def _aws_secret_after(scan: Scan, pos: int) -> None:
    """A 40-character secret access key right after an access key id (`AKIA…,wJalr…`)."""
    start = scan.run_end(_AWS_GAP, pos, min(scan.n, pos + 8))
    if start == pos:
        return
    end = scan.run_end(_AWS_SECRET, start, min(scan.n, start + 41))
    if end - start == 40 and _mixed(scan.raw[start:end]):
        scan.add(start, end, "aws_secret_key", RANK)


# --- JWT and Azure client secrets (a body with inner structure) ------------------------------

_B64URL = _run(_ALNUM + "_-")
_B64URL_CHAR = re.compile(f"[{_ALNUM}_-]")


def run_jwt(scan: Scan) -> None:
    """`eyJ….eyJ….signature` JSON web tokens."""
    raw, last = scan.raw, 0
    for j in scan.hits("eyj"):
        if j < last or not raw.startswith("eyJ", j) or (j > 0 and _B64URL_CHAR.match(raw, j - 1)):
            continue
        head = scan.run_end(_B64URL, j + 3)
        if head - j < 8 or not raw.startswith(".eyJ", head):
            continue
        payload = scan.run_end(_B64URL, head + 4)
        if payload - head < 9 or raw[payload : payload + 1] != ".":
            continue
        sig = scan.run_end(_B64URL, payload + 1)
        if sig - payload > 8:
            scan.add(j, sig, "jwt", RANK)
            last = sig


_AZURE = _run(_ALNUM + "_~.-")
_AZURE_CHAR = re.compile(f"[{_ALNUM}_~.-]")


def run_azure_secret(scan: Scan) -> None:
    """Azure AD client secrets: 3 characters, a digit, `Q~`, 31-34 characters."""
    raw, last = scan.raw, 0
    for j in scan.hits("q~"):
        start = j - 4
        if start < max(last, 0) or raw[j] != "Q" or not raw[j - 1].isdigit():
            continue
        if scan.run_end(_AZURE, start, j) != j or (start > 0 and _AZURE_CHAR.match(raw, start - 1)):
            continue
        end = scan.run_end(_AZURE, j + 2)
        if 31 <= end - j - 2 <= 34:
            scan.add(start, end, "azure_key", RANK)
            last = end


# --- private key blocks ----------------------------------------------------------------------

_LABEL = re.compile(r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?")
_B64_LINE = _run(_ALNUM + "+/=")
_ESCAPED_BODY = re.compile(r"(?:[A-Za-z0-9+/=]|\\[rn])*+")
_HEADER_LINE = re.compile(r"[A-Za-z][A-Za-z-]*: [^\n]*+")


def run_pem(scan: Scan) -> None:
    """Private key blocks (see the module contract)."""
    raw = scan.raw
    begins = scan.hits("-----begin ")
    ends = scan.hits("-----end ")
    markers = sorted([(b, True) for b in begins] + [(e, False) for e in ends])
    positions = [m[0] for m in markers]
    last = 0
    for b in begins:
        if b < last:
            continue
        close = scan.find("-----", b + 11, min(scan.n, b + 11 + 64))
        label = raw[b + 11 : close] if close >= 0 else ""
        if close < 0 or not _LABEL.fullmatch(label):
            continue
        body = close + 5
        k = bisect.bisect_right(positions, b)
        end = -1
        if k < len(markers) and not markers[k][1]:
            e = markers[k][0]
            footer = f"-----END {label}-----"
            if raw.startswith(footer, e):
                end = e + len(footer)
        if end < 0:
            end = _truncated_end(scan, body)
        scan.add(b, end, "private_key", RANK)
        last = end


def _truncated_end(scan: Scan, body: int) -> int:
    """End of a block with no END line: its escaped body, or its base64 and header lines
    (blank lines between them included)."""
    raw = scan.raw
    end = scan.run_end(_ESCAPED_BODY, body)
    if end > body + 1:
        return end
    end = pos = body
    while pos < scan.n and raw[pos] in "\r\n":
        if raw[pos] == "\r":
            pos += 1
            continue
        line = pos + 1
        stop = scan.line_end(line)
        text_end = stop - 1 if stop > line and raw[stop - 1] == "\r" else stop
        if text_end > line:
            b64 = scan.run_end(_B64_LINE, line, text_end)
            if b64 != text_end and not _HEADER_LINE.fullmatch(raw, line, text_end):
                break
            end = text_end
            scan.ops += text_end - line
        pos = stop
    return end


_PUTTY_LINES = re.compile(r"private-lines: *(\d{1,4})")


def run_putty(scan: Scan) -> None:
    """The private lines of a PuTTY key file (`Private-Lines: N` and the N lines after)."""
    last = 0
    for j in scan.hits("private-lines:"):
        m = _PUTTY_LINES.match(scan.low, j)
        if j < last or m is None:
            continue
        start = end = scan.line_end(j) + 1
        for _ in range(int(m.group(1))):
            if end >= scan.n:
                break
            end = scan.line_end(end) + 1
        last = min(end - 1, scan.n)
        if start < last and not scan.raw.startswith(MARKER_PREFIX, start):
            scan.add(start, last, "private_key", RANK)


# --- password hashes -------------------------------------------------------------------------

_CRYPT_IDS = ("1$", "2$", "2a$", "2b$", "2x$", "2y$", "5$", "6$", "7$", "y$", "gy$", "md5$", "sha1$", "apr1$",
              "argon2id$", "argon2i$", "argon2d$", "scrypt$")  # fmt: skip
_FIELD = _run(r"^\s:$'\"")
_HASH = re.compile(r"[./A-Za-z0-9+=]{16,}")
_BASE64 = _run(_ALNUM + "+/=")
_HEX40 = re.compile(r"[0-9A-F]{40}")
_BRACED = ("{ssha", "{sha", "{smd5", "{md5")
CRYPT_NEEDLES = tuple("$" + i for i in _CRYPT_IDS)
MYSQL_HASH_NEEDLES = ("| *", "'*", '"*', "\t*", " *", "=*", "\n*")
HASH_NEEDLES = (*CRYPT_NEEDLES, *MYSQL_HASH_NEEDLES, "pbkdf2_", *_BRACED)
"""The needles of the password hashes."""
START = "\0start:"
"""Prefix of a needle that the engine counts at the start of the text only."""
VAULT_LEGACY_NEEDLES = tuple(c + "s." for c in " \t\n=:'\"(,[")
"""A legacy Vault token after the characters that may precede one (`START + "s."`: or at
the start of the text)."""


def run_hashes(scan: Scan) -> None:
    """crypt(3) hashes (`$6$salt$hash`, `$2b$12$…`, `$y$j9T$salt$hash`), `{SSHA}base64`,
    Django `pbkdf2_sha256$N$salt$hash` and MySQL `*` + 40 hex."""
    raw, last = scan.raw, 0
    for j, needle in scan.hits_of(CRYPT_NEEDLES):
        if j >= last and raw.startswith(needle, j) and not (j > 0 and (raw[j - 1].isalnum() or raw[j - 1] in "$_")):
            last = max(last, _crypt_fields(scan, j, j + len(needle)))
    for j in scan.hits("pbkdf2_"):
        dollar = scan.find("$", j, min(scan.n, j + 24))
        if dollar > 0 and j >= last:
            last = max(last, _crypt_fields(scan, j, dollar + 1))
    for prefix in _BRACED:
        for j in scan.hits(prefix):
            close = scan.find("}", j, min(scan.n, j + 10))
            if close > 0:
                end = scan.run_end(_BASE64, close + 1)
                if end - close > 20:
                    scan.add(j, end, "password_hash", RANK)
    for j, needle in scan.hits_of(MYSQL_HASH_NEEDLES):
        star = j + len(needle) - 1
        if _HEX40.match(raw, star + 1) and not raw[star + 41 : star + 42].isalnum():
            scan.add(star, star + 41, "password_hash", RANK)
            scan.ops += 41


_VAULT_LEGACY = _run(_ALNUM + "_.")


def run_vault_legacy(scan: Scan) -> None:
    """Vault's legacy service tokens: `s.` and 24 letters and digits, at a word boundary."""
    raw = scan.raw
    starts = [j + 1 for j, _ in scan.hits_of(VAULT_LEGACY_NEEDLES)] + scan.hits(START + "s.")
    for j in starts:
        end = scan.run_end(_VAULT_LEGACY, j + 2)
        if raw.startswith("s.", j) and end - j == 26 and _vault_legacy(raw[j + 2 : end]):
            scan.add(j, end, "vault_token", RANK)


def _crypt_fields(scan: Scan, start: int, pos: int) -> int:
    """Record the hash whose fields start at `pos` (up to 4 `field$` then the hash); return
    where reading stopped."""
    raw = scan.raw
    fields = 0
    while True:
        end = scan.run_end(_FIELD, pos)
        if raw[end : end + 1] == "$" and fields < 4:
            fields += 1
            pos = end + 1
            continue
        break
    if fields >= 1 and _HASH.fullmatch(raw, pos, end):
        scan.add(start, end, "password_hash", RANK)
        scan.ops += end - pos
    return end

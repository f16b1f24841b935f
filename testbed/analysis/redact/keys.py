"""Which key names hold secrets: `DB_PASSWORD`, `api-key`, `--token`, `"private_key_id"`.

Contract of `key_info(key)`: `key` is a whole key as written (`[\\w.-]+`, options with their
leading dashes); the result says whether its value is a secret, of which kind, and how the
value may be written, or None. Case does not matter. A key is a secret key when it

- ends with one of `LONG_WORDS` (`password`, `passwd`, `secret`, `token`, `api_key`,
  `accountkey`, `private_key_id`, …), whatever comes before (`MYSQL_ROOT_PASSWORD`,
  `mypassword`, `spring.datasource.password`, `X-Auth-Token`);
- or is one of `SHORT_WORDS` (`pass`, `pwd`, `pw`, `psk`, `auth`, `sig`, `signature`), alone
  or after `_`, `-` or `.` (`DB_PASS`, `MYSQL_PWD`, `wpa_psk`, but not `bypass`, `OLDPWD`);
- or, for options (`-storepass`, `--redis-pass`, `--oauth2-bearer`), ends with `pass` or
  `bearer`;

and is none of `NOT_SECRET_KEYS` (`nopasswd` of sudoers), nor an option asking for a prompt
(`--ask-pass`, `--askpass`, `--no-password`). `KeyInfo.colon` is False for the short words
whose `key: value` reads as prose or counters (`PASS: 12`): they take `=` only, or a colon
after a quoted key (JSON). `KeyInfo.paths` is False for keys whose value is often the path
of a file that holds the secret (`credentials=/root/.smbcred`, `PWD=/root`): such a value
is not a secret. `KeyInfo.min_len` is the shortest value taken.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

LONG_WORDS: tuple[str, ...] = (
    "password", "passwd", "passphrase", "passcode", "secret", "token", "apikey", "api_key", "api-key",
    "accesskey", "access_key", "access-key", "secretkey", "secret_key", "secret-key", "privatekey", "private_key",
    "private-key", "private_key_id", "authkey", "auth_key", "auth-key", "accountkey", "account_key", "masterkey",
    "master_key", "encryptionkey", "encryption_key", "signingkey", "signing_key", "presharedkey", "preshared_key",
    "credential", "credentials", "secret_key_base", "key-data", "key_data", "sessionid", "session_id",
)  # fmt: skip
SHORT_WORDS: tuple[str, ...] = ("pass", "pwd", "pw", "psk", "auth", "sig", "signature")
_SHORT_SUFFIXES = tuple(sep + word for word in SHORT_WORDS for sep in "_-.")
_OPTION_WORDS = ("pass", "bearer")
_EQUALS_ONLY = frozenset({"pass", "auth", "sig", "signature"})
_PATH_KEYS = ("pwd", "credential", "credentials", "private_key", "privatekey", "private-key", "key-data", "key_data")
_MIN_LEN = {"auth": 8, "sig": 8, "signature": 8}
NOT_SECRET_KEYS = frozenset({"nopasswd", "bypass", "oldpwd", "token_type", "secret_name"})
STEMS: tuple[str, ...] = ("pass", "pw", "secret", "token", "key", "cred", "psk", "auth", "sig", "bearer", "sessionid",
                          "session_id")  # fmt: skip
"""Substrings of which every secret key holds one: where the rules look for keys."""


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What `key_info` says about a secret key (see the module contract)."""

    kind: str
    colon: bool = True
    paths: bool = True
    min_len: int = 2


def _kind(name: str) -> str:
    if "aws" in name or "secret_access" in name:
        return "aws_secret_key"
    if name.endswith(("accountkey", "account_key", "sharedaccesskey")):
        return "azure_key"
    if name.endswith("private_key_id"):
        return "gcp_key"
    return "password"


@functools.lru_cache(maxsize=4096)
def key_info(key: str) -> KeyInfo | None:
    """Whether `key` names a secret, and how its value is written (see the contract)."""
    name = key.lower()
    option = name.startswith("-")
    bare = name.lstrip("-")
    if bare in NOT_SECRET_KEYS or (option and bare.startswith(("ask", "no-", "no_"))):
        return None
    word: str | None = None
    if bare.endswith(LONG_WORDS):
        word = next(w for w in LONG_WORDS if bare.endswith(w))
    elif bare in SHORT_WORDS or bare.endswith(_SHORT_SUFFIXES):
        word = next(w for w in SHORT_WORDS if bare.endswith(w))
    elif option and bare.endswith(_OPTION_WORDS):
        word = "pass" if bare.endswith("pass") else "bearer"
    if word is None:
        return None
    return KeyInfo(
        kind=_kind(bare),
        colon=word not in _EQUALS_ONLY or option,
        paths=not bare.endswith(_PATH_KEYS),
        min_len=_MIN_LEN.get(word, 2),
    )

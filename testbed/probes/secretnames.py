"""The one table of file names that suggest key material or credentials.

Used by the secrets probe's parser (every kind a name suggests, ranked with the PEM headers
found in the file) and by residue (whether a changed path counts as `secrets`). Patterns are
`fnmatch` patterns on the base name, case-sensitive; more specific patterns come first, so
`first_kind` gives the most specific kind.
"""

from __future__ import annotations

import fnmatch

SECRET_NAME_KINDS: tuple[tuple[str, str], ...] = (
    ("id_rsa", "ssh_private_key"),
    ("id_dsa", "ssh_private_key"),
    ("id_ecdsa", "ssh_private_key"),
    ("id_ed25519", "ssh_private_key"),
    ("id_ecdsa_sk", "ssh_private_key"),
    ("id_ed25519_sk", "ssh_private_key"),
    ("ssh_host_*_key", "ssh_host_key"),
    ("*.p12", "pkcs12"),
    ("*.pfx", "pkcs12"),
    ("*.jks", "keystore"),
    ("*.keystore", "keystore"),
    ("*.kdbx", "password_store"),
    ("*.ppk", "putty_key"),
    (".htpasswd", "credentials"),
    ("htpasswd", "credentials"),
    ("*.htpasswd", "credentials"),
    (".pgpass", "credentials"),
    (".netrc", "credentials"),
    (".git-credentials", "credentials"),
    ("credentials*", "credentials"),
    ("*.vault_pass", "credentials"),
    (".my.cnf", "credentials"),
    ("*.gpg", "pgp"),
    ("*.key", "key_file"),
    ("*.pem", "pem_file"),
    ("*.crt", "certificate_file"),
    ("*.cer", "certificate_file"),
    ("*.der", "certificate_file"),
    ("*.csr", "certificate_request"),
)


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def name_kinds(path: str) -> set[str]:
    """Every kind the base name of `path` suggests."""
    base = _base(path)
    return {kind for pattern, kind in SECRET_NAME_KINDS if fnmatch.fnmatchcase(base, pattern)}


def first_kind(path: str) -> str | None:
    """The most specific kind the base name of `path` suggests, or None."""
    base = _base(path)
    return next((kind for pattern, kind in SECRET_NAME_KINDS if fnmatch.fnmatchcase(base, pattern)), None)

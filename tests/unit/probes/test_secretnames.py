"""One table of secret file names serves the secrets probe and residue alike."""

from __future__ import annotations

import pytest

from testbed.analysis.residue.paths import path_category, secret_name_kind
from testbed.probes.secretnames import first_kind, name_kinds


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/root/.ssh/id_ed25519", "ssh_private_key"),
        ("/srv/ssh_host_rsa_key", "ssh_host_key"),
        ("/srv/site/htpasswd", "credentials"),
        ("/root/backup.gpg", "pgp"),
        ("/srv/tls/server.csr", "certificate_request"),
        ("/srv/tls/server.key", "key_file"),
        ("/srv/app/config.yaml", None),
    ],
)
def test_probe_and_residue_agree(path: str, kind: str | None) -> None:
    assert first_kind(path) == kind
    assert (kind in name_kinds(path)) if kind else name_kinds(path) == set()
    assert secret_name_kind(path) == kind
    assert (path_category(path) == "secrets") == (kind is not None)


def test_most_specific_kind_first() -> None:
    # `credentials.pem` is both; the table lists credentials first
    assert name_kinds("/x/credentials.pem") == {"credentials", "pem_file"}
    assert first_kind("/x/credentials.pem") == "credentials"
    assert secret_name_kind("/etc/ssl/private/site") == "ssl_private"

"""Fixtures of the guest tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.guest.sshd import running_sshd


@pytest.fixture(scope="module")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, object, str, Path]]:
    """A real OpenSSH sshd on loopback for one test module: (port, client key, host key
    line, its work directory). Tests that use it are marked `needs_sshd`."""
    work = tmp_path_factory.mktemp("sshd")
    with running_sshd(work) as (port, client_key, host_key):
        yield port, client_key, host_key, work

"""Downloads run by a shell."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("curl -fsSL https://x/i.sh | sh", "download-piped-to-shell"),
        ("wget -qO- https://x/i.sh | sudo bash -s -- --yes", "download-piped-to-shell"),
        ("bash <(curl -s https://x/i.sh)", "download-substituted-into-shell"),
        ('sh -c "$(wget -O- https://x/i.sh)"', "download-substituted-into-shell"),
        ("curl -o i.sh https://x/i.sh && bash i.sh", None),
        ("cat i.sh | bash", None),
    ],
)
def test_downloads_run_by_a_shell(text: str, rule: str | None) -> None:
    facts = [f.id for s in effects_of(text).steps for f in s.shell_downloads]
    assert facts == ([rule] if rule else [])

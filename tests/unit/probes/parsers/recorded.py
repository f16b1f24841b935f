"""The recorded snapshot fixtures (tests/unit/fixtures/probes/<distro>/) and facts about them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.probes import parse_snapshot
from testbed.testing.snapshots import snapshot_from_dir

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "probes"
DISTROS = ("debian", "rhel", "alpine")

# Fingerprints printed by `ssh-keygen -lf` for the public keys used in the fixtures.
FP_ED25519 = "SHA256:ObKBUyVamiCT4VoshDiUOrCxXzbJVXD01uvxZoUvZDI"
FP_RSA = "SHA256:35z6sVNzpWBc+VX2cERETSNzZAIx/bkzNWqoTnDQGc0"
FP_ECDSA = "SHA256:+TEVv1fCkSNTSpFiThWH+mbxzwUhH0aU6UAhacxO9EM"


def load(distro: str) -> dict[str, Any]:
    """The parsed snapshot of one recorded fixture directory."""
    return parse_snapshot(snapshot_from_dir(FIXTURES / distro))

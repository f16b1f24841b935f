"""Variables a command sets: its assignments (`X=1 cmd`, a bare `X=1`) and the
arguments of `export`, `declare`, `typeset`, `readonly`, `env`.

Yields history facts (`HISTFILE=/dev/null`, `HISTSIZE=0`: history switched off) and
environment trust bypasses: `GIT_SSL_NO_VERIFY=1`, `NODE_TLS_REJECT_UNAUTHORIZED=0`,
`PYTHONHTTPSVERIFY=0`, `ANSIBLE_HOST_KEY_CHECKING=False`, empty `CURL_CA_BUNDLE` /
`REQUESTS_CA_BUNDLE`, `GIT_SSH_COMMAND`/`RSYNC_RSH` with `StrictHostKeyChecking=no`.
"""

from __future__ import annotations

from collections.abc import Iterable

from testbed.analysis.command.effects import Effects, Fact
from testbed.analysis.command.tools.history import history_assignment
from testbed.analysis.command.tools.trust import FALSE, STRICT_NO, TRUE

_ENV_TRUST = {
    "GIT_SSL_NO_VERIFY": TRUE,
    "NODE_TLS_REJECT_UNAUTHORIZED": frozenset({"0"}),
    "PYTHONHTTPSVERIFY": frozenset({"0"}),
    "ANSIBLE_HOST_KEY_CHECKING": FALSE,
    "CURL_CA_BUNDLE": frozenset({""}),
    "REQUESTS_CA_BUNDLE": frozenset({""}),
}


def _trust(eff: Effects, pairs: Iterable[str]) -> None:
    for pair in pairs:
        key, _, value = pair.partition("=")
        allowed = _ENV_TRUST.get(key)
        if allowed is not None and value.strip("'\"").lower() in {v.lower() for v in allowed}:
            eff.env_bypasses.append(Fact("env-trust-bypass", (pair,)))
        elif key in ("GIT_SSH_COMMAND", "RSYNC_RSH") and STRICT_NO.search(value):
            eff.env_bypasses.append(Fact("env-ssh-no-host-key-check", (pair,)))


def assignments(eff: Effects, cwd: str | None) -> None:
    """The command's own assignments (every command)."""
    pairs = eff.command.assignments
    eff.history += [Fact("histfile-disabled", (p,)) for p in pairs if history_assignment(p)]
    _trust(eff, pairs)


def setters(eff: Effects, cwd: str | None) -> None:
    """`export`, `env`, `declare`, `typeset`, `readonly` arguments."""
    _trust(eff, [a for a in eff.args if "=" in a])


GRAMMARS = dict.fromkeys(("export", "env", "declare", "typeset", "readonly"), setters)

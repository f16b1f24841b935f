"""The per-tool command grammars and the order they run in.

Contract: `apply(effects, cwd)` fills `effects` (whose `command` and `options` are set)
with what its command does; it runs, in this order: the passes every command gets first
(`environment.assignments`, `redirects`, the generic trust options), the grammars
registered for the command's name — or `services.init_script` when argv[0] is an init
script path (`/etc/init.d/X`, `/etc/rc.d/X`) — in module order, then the passes every
command gets last (device writes, host-key and short force options, downloads run by a
shell). `spec_of(name)` is the option grammar (`short_arg`, `long_arg`) of a tool, used
for the one option scan of each command (`Effects.options`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from testbed.analysis.command.effects import Effects
from testbed.analysis.command.tools import (
    accounts,
    archives,
    containers,
    disks,
    downloads,
    edits,
    environment,
    files,
    firewall,
    git,
    history,
    modes,
    network,
    packages,
    power,
    redirects,
    security,
    services,
    shells,
    signals,
    system,
    trust,
)

Grammar = Callable[[Effects, str | None], None]
"""Fills the effects of one simple command; the second argument is the working
directory when the command line set it (`cd /srv && …`), else None."""
Spec = tuple[str, tuple[str, ...]]

_MODULES = (
    services,
    signals,
    files,
    modes,
    edits,
    archives,
    downloads,
    git,
    containers,
    packages,
    firewall,
    network,
    accounts,
    system,
    power,
    security,
    history,
    environment,
)
FIRST: tuple[Grammar, ...] = (environment.assignments, redirects.redirects, trust.option)
LAST: tuple[Grammar, ...] = (disks.device_writes, trust.host_keys, trust.short_force, shells.downloads)
INIT_SCRIPT = re.compile(r"/(init\.d|rc\.d)/[^/]+$")


def _specs() -> dict[str, Spec]:
    out: dict[str, Spec] = {}
    for module in (*_MODULES, disks, trust):
        table: Mapping[str, Spec] = getattr(module, "SPECS", {})
        for name, spec in table.items():
            if name in out and out[name] != spec:
                raise RuntimeError(f"two option grammars for {name}")  # a programming error
            out[name] = spec
    return out


def _grammars() -> dict[str, tuple[Grammar, ...]]:
    out: dict[str, tuple[Grammar, ...]] = {}
    for module in _MODULES:
        for name, grammar in module.GRAMMARS.items():
            out[name] = (*out.get(name, ()), grammar)
    return out


SPECS = _specs()
BY_NAME = _grammars()


def spec_of(name: str) -> Spec:
    """The option grammar of tool `name` (none: `("", ())`)."""
    return SPECS.get(name, ("", ()))


def is_init_script(word: str) -> bool:
    """`/etc/init.d/nginx`, `/etc/rc.d/sshd`: a SysV/BSD init script run by path."""
    return bool(INIT_SCRIPT.search(word))


def apply(effects: Effects, cwd: str | None) -> None:
    """Run every grammar that applies to `effects.command` (see the module docstring)."""
    argv = effects.command.argv
    named = (services.init_script,) if argv and is_init_script(argv[0]) else BY_NAME.get(effects.name, ())
    for grammar in (*FIRST, *named, *LAST):
        grammar(effects, cwd)

"""The one getopt-style option scanner every command grammar uses.

Contract: `scan(args, short_arg, long_arg, stop_at_operand)` never raises and returns
`Options`: the flags seen (`-x` per letter of a cluster, `--name` without its `=value`),
the values of options that take one (in order, all of them), the operands, the option
tokens as written, and `index`, where scanning stopped.

- `short_arg` lists the short letters that take a value (`-u root`, `-uroot`); in a cluster
  (`-xzf FILE`) the first such letter takes the rest of the cluster or the next word.
- `long_arg` lists the long names that take a value (`--user root`); `--user=root` always
  carries its value.
- `--` ends the options (every later word is an operand); a lone `-` is an operand.
- By default options may follow operands (GNU permutation: `rm /tmp/x -rf`); with
  `stop_at_operand` scanning stops at the first operand (`sudo -u root CMD -x`), and the
  operands are everything from `index` on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Options:
    """What `scan` found."""

    flags: frozenset[str] = frozenset()
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    operands: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    index: int = 0

    def has(self, *names: str) -> bool:
        """Whether any of the flags was given."""
        return any(n in self.flags for n in names)

    def last(self, name: str) -> str | None:
        """The last value given to option `name` (None when it has none)."""
        got = self.values.get(name)
        return got[-1] if got else None

    def all(self, *names: str) -> list[str]:
        """Every value of the options `names`, name by name."""
        return [v for n in names for v in self.values.get(n, ())]


def scan(
    args: Sequence[str], short_arg: str = "", long_arg: Iterable[str] = (), stop_at_operand: bool = False
) -> Options:
    """Scan getopt-style options from `args` (see the module docstring)."""
    longs = frozenset(long_arg)
    flags: set[str] = set()
    values: dict[str, list[str]] = {}
    operands: list[str] = []
    written: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1 :]
            return _done(flags, values, operands, written, i + 1)
        if a.startswith("--") and len(a) > 2:
            written.append(a)
            name, eq, value = a.partition("=")
            flags.add(name)
            if eq:
                values.setdefault(name, []).append(value)
            elif name[2:] in longs and i + 1 < len(args):
                values.setdefault(name, []).append(args[i + 1])
                i += 1
        elif a.startswith("-") and len(a) > 1:
            written.append(a)
            i = _cluster(args, i, short_arg, flags, values)
        elif stop_at_operand:
            return _done(flags, values, list(args[i:]), written, i)
        else:
            operands.append(a)
        i += 1
    return _done(flags, values, operands, written, len(args))


def _cluster(args: Sequence[str], i: int, short_arg: str, flags: set[str], values: dict[str, list[str]]) -> int:
    """Record the letters of the short-option cluster `args[i]`; return the index of the
    last word it consumed."""
    a = args[i]
    for k in range(1, len(a)):
        letter = "-" + a[k]
        flags.add(letter)
        if a[k] in short_arg:
            rest = a[k + 1 :]
            if rest:
                values.setdefault(letter, []).append(rest)
            elif i + 1 < len(args):
                values.setdefault(letter, []).append(args[i + 1])
                return i + 1
            return i
    return i


def _done(
    flags: set[str], values: dict[str, list[str]], operands: list[str], written: list[str], index: int
) -> Options:
    return Options(frozenset(flags), {k: tuple(v) for k, v in values.items()}, tuple(operands), tuple(written), index)

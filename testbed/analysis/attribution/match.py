"""How well one command line's footprint explains a target, and `attribute`, which picks
the command (see the package docstring for the levels and the choice)."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from testbed.analysis.attribution.footprint import Footprint, command_effects
from testbed.analysis.attribution.model import RANK, UNATTRIBUTED, Attribution, CommandView, Confidence, Target
from testbed.analysis.command.effects import Write
from testbed.analysis.command.parsed import command_name
from testbed.analysis.command.units import unit_stem

_RESTARTS = frozenset(
    {
        "start",
        "restart",
        "reload-or-restart",
        "try-restart",
        "enable --now",
        "reload",
        "try-reload-or-restart",
        "condrestart",
        "force-reload",
    }
)


class _Best:
    """The best (confidence, method) offered so far; a later offer wins only if higher."""

    def __init__(self) -> None:
        self.found: tuple[Confidence, str] | None = None

    def offer(self, conf: Confidence, method: str) -> None:
        if self.found is None or RANK[conf] > RANK[self.found[0]]:
            self.found = (conf, method)


def _write_matches(path: str, w: Write) -> Confidence | None:
    """How well a write explains `path` (None: not at all)."""
    if w.mode == "abs":
        if path == w.value:
            return "high"
        if any(c in w.value for c in "*?[") and fnmatch.fnmatchcase(path, w.value):
            return "high"
        return None
    if w.mode == "tree":
        return "high" if path == w.value or path.startswith(w.value.rstrip("/") + "/") else None
    if w.mode == "suffix":
        return "medium" if path.endswith("/" + w.value) or path == w.value else None
    if w.mode == "home":
        if path == f"/root/{w.value}" or fnmatch.fnmatchcase(path, f"/home/*/{w.value}"):
            return "medium"
        return None
    return None


@dataclass(frozen=True)
class _PathInfo:
    """A target path with its base name, parent and ancestors, computed once per target."""

    path: str
    base: str
    parent: str
    ancestors: tuple[str, ...]

    @classmethod
    def of(cls, path: str) -> _PathInfo:
        ancestors = []
        up = path
        while up not in ("/", ""):
            ancestors.append(up)
            up = posixpath.dirname(up)
        return cls(path, posixpath.basename(path), posixpath.dirname(path), tuple(ancestors))


def _mentions_path(info: _PathInfo, fp: Footprint) -> bool:
    """A word names the path, its base name (≥ 3 characters) or its parent directory
    (at least two levels deep: `/etc` or `/tmp` alone say nothing)."""
    stripped, names = fp.word_index()
    if info.path in stripped or (len(info.base) >= 3 and info.base in names):
        return True
    return info.parent.count("/") >= 2 and info.parent in stripped


def _token_overlap(tokens: Iterable[str], words: set[str]) -> bool:
    """A significant token (port, address, name) occurs in a word of the command."""
    for token in tokens:
        if not token:
            continue
        for word in words:
            if word == token or re.search(rf"(^|[^0-9A-Za-z.]){re.escape(token)}($|[^0-9A-Za-z])", word):
                return True
    return False


def _program(word: str) -> str:
    """Program name of a process or argv word: basename, trailing `:` dropped."""
    return command_name(word.rstrip(":")).lstrip("-")


def _same_program(a: str, b: str) -> bool:
    """`python3` ~ `python3.11`, `nginx` ~ `nginx:`; names shorter than 2 never match."""
    a, b = _program(a), _program(b)
    if len(a) < 2 or len(b) < 2:
        return False
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _match_writes(infos: Sequence[_PathInfo], fp: Footprint, best: _Best) -> None:
    if not fp.writes:
        return
    exact, trees, rest = fp.write_index()
    for info in infos:
        hit = exact.get(info.path)
        if hit is not None:
            best.offer("high", f"{hit.verb} writes {info.path}")
            continue
        tree = next((trees[a] for a in info.ancestors if a in trees), None) if trees else None
        if tree is not None:
            best.offer("high", f"{tree.verb} writes {tree.value}/")
            continue
        for w in rest:
            conf = _write_matches(info.path, w)
            if conf:
                best.offer(conf, f"{w.verb} writes {info.path}")


def _unit(target: Target, fp: Footprint, best: _Best) -> None:
    value = target.value
    if value in fp.units:
        best.offer("high", f"acts on unit {value} ({', '.join(sorted(fp.units[value]))})")
    stem = unit_stem(value)
    if stem in fp.packages and fp.package_change:
        best.offer("medium", f"installs package {stem}")


def _package(target: Target, fp: Footprint, best: _Best) -> None:
    if target.value in fp.packages and fp.package_change:
        best.offer("high", f"names package {target.value} ({', '.join(sorted(fp.package_verbs))})")
    elif fp.package_change:
        best.offer("medium", f"changes packages ({', '.join(sorted(fp.package_verbs))}): dependency")


def _account(target: Target, fp: Footprint, best: _Best) -> None:
    value = target.value
    if value in fp.accounts:
        best.offer("high", f"account command names {value}")
    elif fp.accounts_stdin and value in " ".join(fp.words).replace(":", " ").split():
        best.offer("medium", f"chpasswd/newusers input names {value}")
    elif fp.package_change:
        best.offer("low", "package maintainer script (package-manager transaction)")


def _writes_under(w: Write, prefixes: Sequence[str]) -> bool:
    return w.mode in ("abs", "tree") and any(w.value == p.rstrip("/") or w.value.startswith(p) for p in prefixes)


def _sysctl(target: Target, fp: Footprint, best: _Best) -> None:
    value = target.value
    if value in fp.sysctl_keys:
        best.offer("high", f"sets sysctl {value}")
    elif fp.sysctl_load:
        best.offer("medium", "loads sysctl configuration")
    elif any(_writes_under(w, ("/etc/sysctl.conf", "/etc/sysctl.d/")) for w in fp.writes) and (
        value in fp.words or any(value in word for word in fp.words)
    ):
        best.offer("medium", f"writes a sysctl file naming {value}")


_BY_TOKENS: dict[str, tuple[str, str, str]] = {
    "firewall": ("firewall_write", "firewall command sharing the rule's port/address/chain", "firewall rule change"),
    "network": ("network_write", "network command naming the address/interface", "network configuration change"),
}
"""Kinds explained by a changing command, better when it names a token of the item:
kind -> (flag, method when a token matches, method otherwise)."""


def _tokens(target: Target, fp: Footprint, best: _Best) -> None:
    flag, named, other = _BY_TOKENS[target.kind]
    if getattr(fp, flag):
        if _token_overlap(target.tokens, fp.words):
            best.offer("high", named)
        else:
            best.offer("medium", other)


def _router(target: Target, fp: Footprint, best: _Best) -> None:
    """A configuration line: a (CLI) command naming every word of it wrote it; one naming
    its numbers and addresses only is a weaker match."""
    if target.tokens and all(t in fp.words for t in target.tokens):
        best.offer("high", "CLI command naming the configuration line")
    elif any(t in fp.words for t in target.tokens if any(ch.isdigit() for ch in t)):
        best.offer("medium", "command naming the line's address or number")


def _mount(target: Target, fp: Footprint, best: _Best) -> None:
    if target.value in fp.mounts:
        best.offer("high", f"mounts/unmounts {target.value}")
    elif fp.mount_all:
        best.offer("medium", "mount -a")


def _program_target(target: Target, fp: Footprint, best: _Best) -> None:
    """Ports and processes: started programs, their arguments and the units (re)started."""
    port = target.value if target.kind == "port" else None
    proc = target.value.split() if target.kind == "process" else []
    for argv in fp.started:
        prog = argv[0]
        names_match = any(_same_program(prog, n) for n in target.names) or (proc and _same_program(prog, proc[0]))
        script_match = bool(proc) and "/" in prog and any(_program(tok) == _program(prog) for tok in proc[1:3])
        if port is not None and _port_in(argv, port):
            best.offer("high" if names_match else "medium", f"starts {_program(prog)} with port {port}")
        if proc and (names_match or script_match):
            same_args = list(argv[1:]) == proc[1:] or (
                script_match and proc[-len(argv) + 1 :] == list(argv[1:]) if len(argv) > 1 else script_match
            )
            best.offer("high" if same_args else "medium", f"starts {_program(prog)}")
        elif port is not None and names_match:
            best.offer("medium", f"starts {_program(prog)}")
    if port is not None and _token_overlap((port,), fp.config_words):
        best.offer("medium", f"names port {port}")
    for unit, verbs in fp.units.items():
        if verbs & _RESTARTS and any(_same_program(unit_stem(unit), n) for n in (*target.names, *(proc[:1]))):
            best.offer("medium", f"(re)starts {unit}")


def _port_in(argv: Sequence[str], port: str) -> bool:
    """The port is an argument: `8000`, `:8000`, `-p8000`, `--port=8000`, `TCP-LISTEN:8000,…`."""
    pat = re.compile(rf"(^|[:=,\s]|^-p|LISTEN:){re.escape(port)}($|[,\s/])")
    return any(a == port or pat.search(a) for a in argv[1:])


_BY_FLAG: dict[str, tuple[str, Confidence, str]] = {
    "pkg_state": ("package_change", "medium", "package-manager transaction"),
    "repo": ("repo_change", "medium", "repository tool"),
    "hostname": ("hostname", "high", "sets the hostname"),
    "cron_spool": ("crontab", "medium", "crontab"),
}
"""Kinds explained by any command with a footprint flag: kind -> (flag, level, method)."""
_BY_KIND: dict[str, Callable[[Target, Footprint, _Best], None]] = {
    "unit": _unit,
    "package": _package,
    "user": _account,
    "group": _account,
    "sysctl": _sysctl,
    "firewall": _tokens,
    "network": _tokens,
    "router": _router,
    "mount": _mount,
    "port": _program_target,
    "process": _program_target,
}


def _match_mentions(target: Target, fp: Footprint, infos: Sequence[_PathInfo], best: _Best) -> None:
    kind, value, words = target.kind, target.value, fp.words
    if infos and any(_mentions_path(i, fp) for i in infos[:20]):
        best.offer("low", "mentions the path, its name or its directory")
    elif kind == "unit" and (value in words or unit_stem(value) in words):
        best.offer("low", f"mentions {unit_stem(value)}")
    elif kind in ("package", "user", "group", "sysctl") and value in words:
        best.offer("low", f"mentions {value}")
    elif kind in ("port", "process") and any(_program(n) in {_program(w) for w in words} for n in target.names):
        best.offer("low", "mentions the program")
    elif kind in ("firewall", "network", "repo") and _token_overlap(target.tokens, words):
        best.offer("low", "mentions a token of the rule/address")


def match(
    target: Target, fp: Footprint, infos: Sequence[_PathInfo], weak: bool = True
) -> tuple[Confidence, str] | None:
    """Best confidence with which one command's footprint explains the target (`infos`:
    the target's paths); ``weak=False`` skips the ``low`` (mention) checks."""
    best = _Best()
    _match_writes(infos, fp, best)
    kind_match = _BY_KIND.get(target.kind)
    if kind_match is not None:
        kind_match(target, fp, best)
    if target.kind in _BY_FLAG:
        flag, level, method = _BY_FLAG[target.kind]
        if getattr(fp, flag):
            best.offer(level, method)
    if best.found is None and weak:
        _match_mentions(target, fp, infos, best)
    return best.found


def attribute(
    target: Target,
    commands: Sequence[CommandView],
    node: str | None,
) -> Attribution:
    """Pick the command that most likely caused `target` on `node` (see the package doc).

    `commands` are the candidates (already filtered by source and window by the caller)."""
    infos = [_PathInfo.of(p) for p in ((target.value,) if target.kind == "path" else ()) + target.paths]
    candidates: list[tuple[CommandView, Footprint, str]] = []
    for cmd in commands:
        effects = command_effects(cmd.command)
        if cmd.node is None or node is None or cmd.node == node:
            candidates.append((cmd, effects.local, ""))
        if effects.remote.words:
            candidates.append(
                (cmd, effects.remote, f" (via ssh from {cmd.node})" if cmd.node != node else " (via ssh)")
            )
    found: list[tuple[int, int, int, CommandView, str, Confidence]] = []
    for weak in (False, True):  # mentions are only looked for when nothing touches the item
        for cmd, fp, suffix in candidates:
            m = match(target, fp, infos, weak)
            if m:
                ok = 1 if cmd.exit_code in (0, None) else 0
                found.append((RANK[m[0]], ok, cmd.seq, cmd, m[1] + suffix, m[0]))
        if found:
            break
    if not found:
        return UNATTRIBUTED
    top = max(f[0] for f in found)
    best = max((f for f in found if f[0] == top), key=lambda f: (f[1], f[2]))
    level_count = sum(1 for f in found if f[0] == top)
    return Attribution(best[3], best[5], best[4], candidates=level_count)

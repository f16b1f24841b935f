"""File tools: what rm, rmdir, unlink, shred, touch, mkdir, truncate, mkfifo, mknod,
setfacl, chattr, cp, mv, install, ln, rsync, scp, tee, dd and find write or remove.

Writes (see `effects.Write`): every path operand (brace-expanded; `mkdir -p` also each
parent; recursive `rm`/`setfacl`/`chattr` the whole tree); for copies the destination,
`dest/basename(src)` for each source and, when recursive (`-r`, `-a`, rsync, mv), the
destination tree; `mv` also its sources; `tee` its files; `dd of=`. Removals: `rm` (with
its recursive and force options in any spelling) and `find … -delete` (a whole tree,
without asking).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from testbed.analysis.command.effects import Effects, Removal, Write
from testbed.analysis.command.paths import brace_expand, path_write, path_writes

_COPY_LONG = ("target-directory", "suffix", "mode", "owner", "group", "rsh", "exclude")
_TOUCH_LONG = ("mode", "size", "reference", "date")

SPECS = {
    "cp": ("tS", _COPY_LONG),
    "mv": ("tS", _COPY_LONG),
    "install": ("tmogS", _COPY_LONG),
    "ln": ("tS", _COPY_LONG),
    "rsync": ("efT", _COPY_LONG),
    "scp": ("cFiJloPS", _COPY_LONG),
    "mkdir": ("m", _TOUCH_LONG),
    "truncate": ("sr", _TOUCH_LONG),
    "touch": ("dtr", _TOUCH_LONG),
    "mkfifo": ("m", _TOUCH_LONG),
    "mknod": ("m", _TOUCH_LONG),
    "shred": ("ns", ("iterations", "size", "random-source")),
    "setfacl": ("", _TOUCH_LONG),
    "chattr": ("", _TOUCH_LONG),
}


def remove(eff: Effects, cwd: str | None) -> None:
    """rm, rmdir, unlink, shred: their operands (rm -r: the trees)."""
    opts = eff.options
    recursive = eff.name == "rm" and opts.has("-r", "-R", "--recursive")
    if eff.name == "rm":
        eff.removals.append(Removal("rm", opts.operands, recursive, opts.has("-f", "--force")))
    eff.writes += path_writes(opts.operands, eff.name, cwd, tree=recursive)
    if recursive:
        eff.writes += path_writes(opts.operands, eff.name, cwd)


def touch(eff: Effects, cwd: str | None) -> None:
    """touch, mkdir (-p: every parent), truncate, mkfifo, mknod; setfacl/chattr (the
    first operand is the ACL or attribute spec)."""
    name, opts = eff.name, eff.options
    ops: Sequence[str] = opts.operands
    if name == "mkdir" and opts.has("-p", "--parents"):
        for op in ops:
            w = path_write(op, name, cwd)
            if w and w.mode == "abs":
                parts = w.value.strip("/").split("/")
                for i in range(1, len(parts) + 1):
                    eff.writes.append(Write("/" + "/".join(parts[:i]), "abs", name))
            elif w:
                eff.writes.append(w)
        return
    recursive = name in ("setfacl", "chattr") and opts.has("-r", "-R", "--recursive")
    if name in ("setfacl", "chattr") and ops:
        ops = ops[1:]
    eff.writes += path_writes(ops, name, cwd, tree=recursive)
    if recursive:
        eff.writes += path_writes(ops, name, cwd)


def copy(eff: Effects, cwd: str | None) -> None:
    """cp/mv/install/ln/rsync/scp (see the module docstring)."""
    name, opts = eff.name, eff.options
    ops = [one for op in opts.operands for one in brace_expand(op)]
    target = opts.last("-t") or opts.last("--target-directory")
    if name == "install" and "-d" in opts.flags:
        eff.writes += path_writes(ops, name, cwd)
        return
    if target:
        dest, sources = target, ops
    elif len(ops) >= 2:
        dest, sources = ops[-1], ops[:-1]
    else:
        return
    if ":" in dest.split("/")[0] and name in ("scp", "rsync"):
        return  # remote destination
    recursive = opts.has("-r", "-R", "-a", "--recursive", "--archive") or name in ("rsync", "mv")
    eff.writes += path_writes([dest], name, cwd, tree=recursive)
    if recursive:
        eff.writes += path_writes([dest], name, cwd)
    for src in sources:
        base = posixpath.basename(src.rstrip("/"))
        if base and not any(c in base for c in "*?["):
            eff.writes += path_writes([posixpath.join(dest, base)], name, cwd, tree=recursive)
        if name == "mv":
            eff.writes += path_writes([src], "mv (source)", cwd)


def tee(eff: Effects, cwd: str | None) -> None:
    eff.writes += path_writes(eff.options.operands, "tee", cwd)


def dd(eff: Effects, cwd: str | None) -> None:
    for a in eff.args:
        if a.startswith("of="):
            eff.writes += path_writes([a[3:]], "dd", cwd)


def find(eff: Effects, cwd: str | None) -> None:
    """`find ROOTS… -delete` (the `-exec` part is a command of its own)."""
    if "-delete" in eff.args:
        eff.removals.append(Removal("find", tuple(_find_roots(eff.args)), True, True))


def _find_roots(args: Sequence[str]) -> list[str]:
    roots: list[str] = []
    for a in args:
        if a in ("-H", "-L", "-P") or a.startswith("-O") or a.startswith("-D"):
            continue
        if a.startswith("-") or a in ("(", "!", ")"):
            break
        roots.append(a)
    return roots or ["."]


GRAMMARS = {
    **{name: remove for name in ("rm", "rmdir", "unlink", "shred")},
    **{name: touch for name in ("touch", "mkdir", "truncate", "mkfifo", "mknod", "setfacl", "chattr")},
    **{name: copy for name in ("cp", "mv", "install", "ln", "rsync", "scp")},
    "tee": tee,
    "dd": dd,
    "find": find,
}

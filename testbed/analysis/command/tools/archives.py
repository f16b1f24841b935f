"""Archives: `tar -c` writes its archive, `tar -x` (and `unzip`) the tree it extracts
into (`-C DIR` / `-d DIR`, else the known working directory). Old-style `tar xzf FILE`
letters count as options."""

from __future__ import annotations

import re

from testbed.analysis.command.effects import Effects, Write
from testbed.analysis.command.options import scan
from testbed.analysis.command.paths import path_writes

_TAR_ARG = "fCbHKLNgTVX"
_TAR_LONG = ("file", "directory", "exclude", "transform", "owner", "group")

SPECS = {"tar": (_TAR_ARG, _TAR_LONG), "bsdtar": (_TAR_ARG, _TAR_LONG), "unzip": ("dxP", ())}


def tar(eff: Effects, cwd: str | None) -> None:
    args = eff.args
    if not args:
        return
    first = args[0]
    rest = list(args)
    flags: set[str] = set()
    file = None
    if not first.startswith("-") and re.fullmatch(r"[A-Za-z]+", first):  # old style: tar xzf FILE
        letters, rest = first, list(args[1:])
        flags = {"-" + c for c in letters}
        file = rest.pop(0) if "f" in letters and rest else None
    opts = scan(rest, _TAR_ARG, _TAR_LONG)
    flags |= opts.flags
    file = file or opts.last("-f") or opts.last("--file")
    directory = opts.last("-C") or opts.last("--directory")
    if flags & {"-c", "--create", "-r", "--append", "-u", "--update"} and file:
        eff.writes += path_writes([file], "tar -c", cwd)
    if flags & {"-x", "--extract", "--get"}:
        if directory:
            eff.writes += path_writes([directory], "tar -x", cwd, tree=True)
        elif cwd:
            eff.writes.append(Write(cwd, "tree", "tar -x"))


def unzip(eff: Effects, cwd: str | None) -> None:
    target = eff.options.last("-d")
    if target is not None:
        eff.writes += path_writes([target], "unzip -d", cwd, tree=True)
    elif cwd:
        eff.writes.append(Write(cwd, "tree", "unzip"))


GRAMMARS = {"tar": tar, "bsdtar": tar, "unzip": unzip}

"""Tools that write files they are given: `sed -i`, `perl -i`, editors, `htpasswd`,
`ssh-keygen`, `openssl … -out/-keyout/-certout`, `visudo`.

- `sed -i[SUFFIX]` / `perl -i[SUFFIX]`: the files after the script (every operand when the
  script came with -e/-f); with a SUFFIX also the backups FILE+SUFFIX.
- `ssh-keygen -f FILE` writes FILE and FILE.pub; without -f the default key of the type
  (-t; ed25519 and rsa when -t is absent) under some ~/.ssh; `-A` the host keys.
"""

from __future__ import annotations

import re

from testbed.analysis.command.effects import Effects, Write
from testbed.analysis.command.paths import path_writes

_SSH_KEYGEN_ARG = "abCDEFfGIJjKMmNnOPrSstVWwYzZ"
_EDITORS = ("vi", "vim", "nano", "emacs", "ed")

SPECS = {
    "sed": ("efl", ("expression", "file", "line-length")),
    "perl": ("eEIlmMx", ()),
    **{name: ("cS", ()) for name in _EDITORS},
    "htpasswd": ("C", ()),
    "ssh-keygen": (_SSH_KEYGEN_ARG, ()),
    "visudo": ("fx", ()),
}
_KEY_FILES = {
    "dsa": "id_dsa",
    "ecdsa": "id_ecdsa",
    "ed25519": "id_ed25519",
    "rsa": "id_rsa",
    "ecdsa-sk": "id_ecdsa_sk",
    "ed25519-sk": "id_ed25519_sk",
}


def in_place(eff: Effects, cwd: str | None) -> None:
    """`sed -i` / `perl -i` (see the module docstring)."""
    name, args = eff.name, eff.args
    inplace = [a for a in args if a.startswith("--in-place") or re.fullmatch(r"-[a-zA-Z]*i\S*", a)]
    if not inplace:
        return
    m = re.match(r"^(?:--in-place=|-[a-zA-Z]*i)(\S*)$", inplace[0])
    suffix = m.group(1) if m else ""
    opts = eff.options
    scripted = opts.has("-e", "-f", "--expression", "--file") if name == "sed" else opts.has("-e", "-E")
    files = list(opts.operands if scripted else opts.operands[1:])
    eff.writes += path_writes(files, f"{name} -i", cwd)
    if suffix and "*" not in suffix:
        eff.writes += path_writes([f + suffix for f in files], f"{name} -i{suffix} (backup)", cwd)


def editor(eff: Effects, cwd: str | None) -> None:
    eff.writes += path_writes([o for o in eff.options.operands if not o.startswith("+")], eff.name, cwd)


def htpasswd(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    if opts.operands and "-n" not in opts.flags:
        eff.writes += path_writes(opts.operands[:1], eff.name, cwd)


def visudo(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    if "-c" not in opts.flags:
        target = opts.last("-f")
        eff.writes += path_writes(["/etc/sudoers" if target is None else target], "visudo", cwd)


def ssh_keygen(eff: Effects, cwd: str | None) -> None:
    """`ssh-keygen` (see the module docstring)."""
    opts = eff.options
    key = opts.last("-f")
    if opts.flags & {"-l", "-y", "-F", "-R", "-H", "-L", "-Q", "-k"} and key is None:
        return
    if opts.flags & {"-l", "-y", "-F", "-L", "-Q"}:
        return
    if key is not None:
        eff.writes += path_writes([key, key + ".pub"], eff.name, cwd)
        return
    if "-A" in opts.flags:
        eff.writes.append(Write("/etc/ssh", "tree", eff.name))
        return
    kind = opts.last("-t")
    bases = [_KEY_FILES.get(kind, "id_" + kind)] if kind else ["id_ed25519", "id_rsa"]
    for base in bases:
        eff.writes.append(Write(f".ssh/{base}", "home", eff.name))
        eff.writes.append(Write(f".ssh/{base}.pub", "home", eff.name))


def openssl(eff: Effects, cwd: str | None) -> None:
    args = eff.args
    for i, a in enumerate(args):
        if a in ("-out", "-keyout", "-certout") and i + 1 < len(args):
            eff.writes += path_writes([args[i + 1]], f"openssl {a}", cwd)


GRAMMARS = {
    "sed": in_place,
    "perl": in_place,
    **{name: editor for name in _EDITORS},
    "htpasswd": htpasswd,
    "visudo": visudo,
    "ssh-keygen": ssh_keygen,
    "openssl": openssl,
}

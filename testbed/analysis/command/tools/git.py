"""git: `clone` writes its directory, `clean -f -d` removes untracked trees, and the
options that force past a safety check or turn off TLS verification.

The subcommand is the first operand after git's own options (`-C DIR`, `-c k=v`,
`--git-dir` …), scanned with options anywhere; `-c http[.<url>].sslVerify=false`,
`git config http.sslVerify false`, `push -f`/`+refspec` and `branch -D` are bypasses.
"""

from __future__ import annotations

import posixpath
import re

from testbed.analysis.command.effects import Effects, Fact, Removal
from testbed.analysis.command.options import scan
from testbed.analysis.command.paths import path_writes

_FALSE = frozenset({"0", "false", "no", "off"})

SPECS = {"git": ("Cc", ("git-dir", "work-tree", "namespace", "exec-path"))}


def git(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    for value in opts.all("-c"):
        if re.fullmatch(r"(?i)http(\..*)?\.sslverify=(false|0|no|off)", value):
            eff.bypasses.append(Fact("git-ssl-no-verify", (value,)))
    if not opts.operands:
        return
    sub = opts.operands[0]
    rest = eff.args[eff.args.index(sub) + 1 :]
    if sub == "clone":
        _clone(eff, rest, cwd)
    elif sub == "clean":
        got = scan(rest, "e", ("exclude",))
        eff.removals.append(Removal("git", got.operands, got.has("-d"), got.has("-f", "--force")))
    elif sub == "push":
        got = scan(rest, "o", ("push-option", "repo", "receive-pack", "exec"))
        if "-f" in got.flags or any(r.startswith("+") for r in got.operands[1:]):
            eff.bypasses.append(Fact("git-push-force", ("-f",)))
    elif sub == "branch" and "-D" in scan(rest).flags:
        eff.bypasses.append(Fact("git-branch-force-delete", ("-D",)))
    elif sub == "config":
        words = [w.lower() for w in scan(rest, "f", ("file", "type")).operands]
        if len(words) >= 2 and re.fullmatch(r"http(\..*)?\.sslverify", words[0]) and words[1] in _FALSE:
            eff.bypasses.append(Fact("git-config-ssl-no-verify", tuple(words[:2])))


def _clone(eff: Effects, rest: tuple[str, ...], cwd: str | None) -> None:
    got = scan(rest, "bcoju", ("branch", "depth", "origin", "config", "reference", "jobs", "upload-pack"))
    if not got.operands:
        return
    url = got.operands[0]
    dest = got.operands[1] if len(got.operands) > 1 else posixpath.basename(url.rstrip("/")).removesuffix(".git")
    eff.writes += path_writes([dest], "git clone", cwd, tree=True)
    eff.writes += path_writes([dest], "git clone", cwd)


GRAMMARS = {"git": git}

"""Downloaders: the files wget and curl write, and curl's `-k`.

- wget: `-O FILE`, else each URL's file name (`index.html` for a URL ending in `/`) in
  `-P DIR` (and that tree) or the working directory; `-o/-a LOG`.
- curl: `-o FILE` (in `--output-dir`), `-c` cookie jar, `-D` header dump, `-O` the URL's
  file name (none for a URL ending in `/`); `-k` in any cluster (`-sSLk`) disables certificate verification.
"""

from __future__ import annotations

import posixpath

from testbed.analysis.command.effects import Effects, Fact
from testbed.analysis.command.paths import path_writes

SPECS = {
    "wget": ("OPoaeiBtTwUYQdlAR", ("output-document", "directory-prefix", "output-file")),
    "curl": (
        "AbcCdDeEFHKmoPQrTuUwxXYyzt",
        (
            "output",
            "output-dir",
            "data",
            "header",
            "user",
            "request",
            "cookie-jar",
            "config",
            "dump-header",
            "trace",
            "trace-ascii",
        ),
    ),
}


def _remote_name(url: str) -> str:
    """The last part of a URL's path (`""` for `https://host/` or `https://host/dir/`)."""
    path = url.split("?")[0].split("#")[0]
    if "://" in path:
        path = path.split("://", 1)[1].partition("/")[2]
    return posixpath.basename(path)


def wget(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    out = opts.last("-O") or opts.last("--output-document")
    prefix = opts.last("-P") or opts.last("--directory-prefix")
    log = opts.last("-o") or opts.last("--output-file") or opts.last("-a")
    if log:
        eff.writes += path_writes([log], "wget -o", cwd)
    if out:
        eff.writes += path_writes([out], "wget -O", cwd)
        return
    for url in opts.operands:
        base = _remote_name(url) or "index.html"
        if prefix:
            eff.writes += path_writes([posixpath.join(prefix, base)], "wget -P", cwd)
            eff.writes += path_writes([prefix], "wget -P", cwd, tree=True)
        else:
            eff.writes += path_writes([base], "wget", cwd)


def curl(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    directory = opts.last("--output-dir")
    for key in ("-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header"):
        target = opts.last(key)
        if target is not None:
            eff.writes += path_writes([posixpath.join(directory, target) if directory else target], f"curl {key}", cwd)
    if opts.has("-O", "--remote-name", "--remote-name-all"):
        for url in opts.operands:
            base = _remote_name(url)
            if base:
                eff.writes += path_writes([posixpath.join(directory, base) if directory else base], "curl -O", cwd)
    if "-k" in opts.flags:
        eff.bypasses.append(Fact("curl-insecure", ("-k",)))


GRAMMARS = {"wget": wget, "curl": curl}

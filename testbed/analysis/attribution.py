"""Which recorded command most likely caused a change seen between two snapshots.

Every command line is parsed once with `testbed.analysis.shell.parse` into `Effects`: the
paths it writes, the units, packages, users, sysctl keys and mount points it acts on, the
servers it starts. A change is described by a `Target` (a path, unit, package, user,
group, port, process, sysctl key, firewall rule, network item, mount, hostname, repository
or package-manager state) and `attribute(target, commands)` picks the command.

Confidence levels (a higher level always wins over a lower one):

- ``high``: the command touches the item itself — an absolute path it writes, creates,
  moves, copies, deletes or chmods (redirections `>`/`>>`/`&>`, `tee`, `cp`, `mv`,
  `install`, `ln`, `rsync`, `touch`, `mkdir`, `truncate`, `rm`, `chmod`/`chown`, `sed -i`,
  `perl -i`, `dd of=`, `ssh-keygen -f`, `openssl … -out/-keyout`, `wget -O/-P`, `curl
  -o/--output-dir`, `tar -x -C`, `unzip -d`, `git clone DIR`, `htpasswd`, editors), or a
  path inside a tree it writes (`cp -r`, `tar -x -C`, `unzip -d`, `git clone`, `wget -P`,
  `chmod -R`); a unit named by `systemctl`/`service`/`rc-service`/`rc-update`/
  `update-rc.d`/`chkconfig`; a package named by an install/remove command; a user or group
  named by `useradd`/`usermod`/`passwd`/`groupadd`/`gpasswd`/`adduser`/…; a sysctl key set
  by `sysctl -w k=v` or written under /proc/sys; a firewall rule sharing a port, address or
  chain name with a rule-changing `nft`/`iptables`/`ufw`/`firewall-cmd` command; an address
  or route sharing an address/interface with an `ip addr|route|link` change; a mount point
  named by `mount`/`umount`/`swapon`; a server started with the listening port on its
  command line (`python3 -m http.server 8000`, `nc -l 9000`, `socat TCP-LISTEN:…`); a
  process whose command line equals the started command; `hostnamectl set-hostname`.
- ``medium``: the command very likely caused it but the match is indirect — a relative path
  or a default output name matched by suffix (`wget URL` in an unknown directory, `~/x`,
  `ssh-keygen` without `-f` → `*/.ssh/id_<type>`); any package-changing command for a
  package it did not name (dependencies); a rule-changing firewall command sharing no
  token; `sysctl -p`/`--system`, or a write to a sysctl file that mentions the key; a
  start/restart of a unit whose name matches the program owning a socket or process; the
  same program started with other arguments; a port number on the command line of a
  command that is not a client (`curl`, `ss`, …); `mount -a`; `crontab`; a write to the
  unit's own unit file; `chpasswd`/`newusers` input naming the user.
- ``low``: the item is only mentioned — the path's base name or parent directory appears
  as a word, the unit/package/user/program name or the port appears in the text.
- ``none``: nothing matched; the change is unattributed.

Among the matching commands of the best level, `attribute` picks the LAST one by `seq`,
preferring commands that did not fail (exit status 0 or unknown) over failed ones. Only
commands on the target's node are considered, plus (rule: cross-node) commands on other
nodes whose matching part ran through `ssh HOST '…'` (their method says "via ssh").

Contract: nothing here raises on odd command text (the shell parser is total).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from testbed.analysis.shell import SimpleCommand, command_name, parse, scan_options

Confidence = Literal["high", "medium", "low", "none"]
RANK: dict[str, int] = {"none": 0, "low": 1, "medium": 2, "high": 3}
"""Order of the confidence levels."""

TEXT_LIMIT = 500
"""Command text kept in evidence is cut to this many characters."""


@dataclass(frozen=True)
class CommandView:
    """What attribution needs of one recorded command (a row of `commands`)."""

    id: int
    seq: int
    node: str | None
    phase: str
    source: str
    command: str
    exit_code: int | None = None

    def to_evidence(self) -> dict[str, Any]:
        """JSON-able description of the command for a finding's evidence (text cut to
        `TEXT_LIMIT` characters)."""
        text = self.command if len(self.command) <= TEXT_LIMIT else self.command[:TEXT_LIMIT] + "…"
        return {
            "id": self.id,
            "seq": self.seq,
            "node": self.node,
            "source": self.source,
            "phase": self.phase,
            "exit_code": self.exit_code,
            "text": text,
        }


# ------------------------------------------------------------------------------ effects


@dataclass(frozen=True)
class Write:
    """One path a command writes.

    ``mode``: ``abs`` (absolute path, may hold glob characters), ``tree`` (absolute
    directory: everything below it counts), ``suffix`` (relative path or default output
    name in an unknown directory: matches paths ending with ``/`` + value), ``home`` (a
    path below some home directory: ``/root/VALUE`` or ``/home/*/VALUE``)."""

    value: str
    mode: str
    verb: str


@dataclass
class Effects:
    """What one simple command (or a whole command line, merged) acts on."""

    writes: list[Write] = field(default_factory=list)
    units: dict[str, set[str]] = field(default_factory=dict)  # unit -> verbs
    packages: set[str] = field(default_factory=set)  # explicitly named by install/remove
    package_change: bool = False  # installs, removes or upgrades packages
    package_verbs: set[str] = field(default_factory=set)
    repo_change: bool = False
    accounts: set[str] = field(default_factory=set)  # user and group names acted on
    accounts_stdin: bool = False  # chpasswd/newusers: names come from the input
    firewall_write: bool = False
    sysctl_keys: set[str] = field(default_factory=set)
    sysctl_load: bool = False
    network_write: bool = False
    mounts: set[str] = field(default_factory=set)
    mount_all: bool = False
    hostname: bool = False
    crontab: bool = False
    started: list[tuple[str, ...]] = field(default_factory=list)  # argv of programs started
    words: set[str] = field(default_factory=set)  # every word, target and here-doc token
    config_words: set[str] = field(default_factory=set)  # words of non-client commands or of commands that write
    _index: tuple[frozenset[str], frozenset[str]] | None = field(default=None, repr=False, compare=False)
    _writes: tuple[dict[str, Write], dict[str, Write], list[Write]] | None = field(
        default=None, repr=False, compare=False
    )

    def write_index(self) -> tuple[dict[str, Write], dict[str, Write], list[Write]]:
        """(plain absolute writes by path, tree writes by directory, the other writes),
        built once like `word_index`."""
        if self._writes is None:
            exact: dict[str, Write] = {}
            trees: dict[str, Write] = {}
            rest: list[Write] = []
            for w in self.writes:
                if w.mode == "abs" and not any(c in w.value for c in "*?["):
                    exact.setdefault(w.value, w)
                elif w.mode == "tree":
                    trees.setdefault(w.value.rstrip("/") or "/", w)
                else:
                    rest.append(w)
            self._writes = (exact, trees, rest)
        return self._writes

    def word_index(self) -> tuple[frozenset[str], frozenset[str]]:
        """(words without trailing ``/``, their base names), built once (effects are cached
        and never change after `command_effects` returns)."""
        if self._index is None:
            stripped = frozenset(w.rstrip("/") for w in self.words if w.rstrip("/"))
            self._index = (stripped, frozenset(posixpath.basename(w) for w in stripped))
        return self._index

    def merge(self, other: Effects) -> None:
        """Add `other`'s effects to these."""
        self.writes += other.writes
        for unit, verbs in other.units.items():
            self.units.setdefault(unit, set()).update(verbs)
        self.packages |= other.packages
        self.package_change |= other.package_change
        self.package_verbs |= other.package_verbs
        self.repo_change |= other.repo_change
        self.accounts |= other.accounts
        self.accounts_stdin |= other.accounts_stdin
        self.firewall_write |= other.firewall_write
        self.sysctl_keys |= other.sysctl_keys
        self.sysctl_load |= other.sysctl_load
        self.network_write |= other.network_write
        self.mounts |= other.mounts
        self.mount_all |= other.mount_all
        self.hostname |= other.hostname
        self.crontab |= other.crontab
        self.started += other.started
        self.words |= other.words
        self.config_words |= other.config_words


@dataclass
class CommandEffects:
    """The effects of a whole command line: ``local`` (what runs on the command's node) and
    ``remote`` (what runs through ``ssh HOST '…'``, i.e. possibly on another node)."""

    local: Effects
    remote: Effects
    parts: list[tuple[SimpleCommand, Effects]]


_DEVNULL = re.compile(r"^(/dev/(null|stdout|stderr|tty|fd/\d+|pts/\d+)|&?\d+|-)$")
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_CLIENTS = frozenset(
    {
        "curl",
        "wget",
        "ss",
        "netstat",
        "lsof",
        "telnet",
        "nmap",
        "ping",
        "ping6",
        "dig",
        "nslookup",
        "host",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "echo",
        "printf",
        "cat",
        "less",
        "head",
        "tail",
        "ps",
        "fuser",
        "journalctl",
        "ssh",
        "scp",
        "sftp",
        "traceroute",
        "tracepath",
        "mtr",
        "openssl",
        "systemctl",
        "iptables",
        "nft",
        "ufw",
        "firewall-cmd",
        "sed",
        "awk",
        "test",
        "[",
        "wait",
        "kill",
    }
)
_SHELLISH = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "nohup", "setsid", "sudo", "env", "exec", "timeout"})


def _norm(path: str) -> str:
    """Normalise an absolute path (collapse `//`, `/./`, `/../`; no trailing slash)."""
    out = posixpath.normpath(path)
    return "/" if out == "//" else out


def _path_write(word: str, verb: str, cwd: str | None, tree: bool = False) -> Write | None:
    """The `Write` for a path word as the command wrote it (None for /dev/null & co.)."""
    word = word.strip()
    if not word or _DEVNULL.match(word) or word.startswith(("http://", "https://", "ftp://")):
        return None
    if "$" in word or "`" in word:  # keep the literal tail after the last expansion
        tail = re.split(r"[$`][^/]*", word)[-1].strip("/")
        return Write(tail, "suffix", verb) if tail else None
    for home in ("~/", "$HOME/", "${HOME}/"):
        if word.startswith(home):
            rest = _norm("/" + word[len(home) :]).lstrip("/")
            return Write(rest, "home", verb) if rest else None
    if word.startswith("/"):
        return Write(_norm(word), "tree" if tree else "abs", verb)
    if word.startswith("~"):
        return None
    if cwd:
        return Write(_norm(posixpath.join(cwd, word)), "tree" if tree else "abs", verb)
    rel = posixpath.normpath(word)
    if rel in (".", "..") or rel.startswith("../"):
        return None
    return Write(rel, "suffix", verb)


def _operands(args: Sequence[str], short_arg: str = "", long_arg: Sequence[str] = ()) -> tuple[list[str], Any]:
    """Operands and options of an argument list (options may follow operands)."""
    opts = scan_options(args, short_arg, long_arg, stop_at_operand=False)
    operands: list[str] = []
    skip = False
    after_dashdash = False
    for a in args:
        if skip:
            skip = False
            continue
        if after_dashdash:
            operands.append(a)
            continue
        if a == "--":
            after_dashdash = True
            continue
        if a.startswith("--") and len(a) > 2:
            name = a[2:].partition("=")[0]
            if "=" not in a and name in long_arg:
                skip = True
            continue
        if a.startswith("-") and len(a) > 1:
            letters = a[1:]
            for k, letter in enumerate(letters):
                if letter in short_arg:
                    if k == len(letters) - 1:
                        skip = True
                    break
            continue
        operands.append(a)
    return operands, opts


def _unit_name(name: str) -> str:
    """`nginx` → `nginx.service`; names with a known unit suffix are kept."""
    name = name.strip()
    if re.search(r"\.(service|socket|timer|target|mount|automount|path|slice|scope|swap|device)$", name):
        return name
    return name + ".service"


_SYSTEMCTL_VERBS = frozenset(
    {
        "start",
        "stop",
        "restart",
        "reload",
        "try-restart",
        "reload-or-restart",
        "try-reload-or-restart",
        "enable",
        "disable",
        "reenable",
        "mask",
        "unmask",
        "kill",
        "preset",
        "link",
        "revert",
        "edit",
        "condrestart",
        "force-reload",
        "isolate",
        "set-property",
    }
)
_PKG_TOOLS: dict[str, frozenset[str]] = {
    "apt-get": frozenset(
        {
            "install",
            "remove",
            "purge",
            "upgrade",
            "dist-upgrade",
            "full-upgrade",
            "autoremove",
            "reinstall",
            "build-dep",
            "autopurge",
        }
    ),
    "apt": frozenset(
        {
            "install",
            "remove",
            "purge",
            "upgrade",
            "full-upgrade",
            "dist-upgrade",
            "autoremove",
            "reinstall",
            "autopurge",
        }
    ),
    "aptitude": frozenset({"install", "remove", "purge", "upgrade", "safe-upgrade", "full-upgrade", "reinstall"}),
    "dnf": frozenset(
        {
            "install",
            "remove",
            "erase",
            "upgrade",
            "update",
            "reinstall",
            "downgrade",
            "autoremove",
            "group",
            "groupinstall",
            "localinstall",
        }
    ),
    "yum": frozenset(
        {
            "install",
            "remove",
            "erase",
            "upgrade",
            "update",
            "reinstall",
            "downgrade",
            "autoremove",
            "groupinstall",
            "localinstall",
        }
    ),
    "microdnf": frozenset({"install", "remove", "upgrade", "update", "reinstall"}),
    "tdnf": frozenset({"install", "remove", "erase", "upgrade", "update", "reinstall"}),
    "zypper": frozenset({"install", "in", "remove", "rm", "update", "up", "dist-upgrade", "dup"}),
    "apk": frozenset({"add", "del", "upgrade", "fix"}),
    "pacman": frozenset(),
}
_ACCOUNT_TOOLS = frozenset(
    {
        "useradd",
        "adduser",
        "usermod",
        "userdel",
        "deluser",
        "groupadd",
        "addgroup",
        "groupmod",
        "groupdel",
        "delgroup",
        "gpasswd",
        "passwd",
        "chage",
        "chsh",
        "chfn",
        "smbpasswd",
        "lusermod",
    }
)
_FW_READONLY = re.compile(r"^(-L|-S|--list|--list-rules|-nvL|-nL|-vL|-Ln|-Lnv|-C|--check|--line-numbers|-n|-v|-x)$")
_NET_IP_WRITE = frozenset({"add", "del", "delete", "replace", "change", "append", "flush", "set", "a", "d"})


def _simple_effects(sc: SimpleCommand, cwd: str | None) -> Effects:
    """The effects of one simple command (`cwd` resolves relative paths when known)."""
    eff = Effects()
    argv = sc.argv
    for word in argv:
        eff.words.update(brace_expand(word))
    for r in sc.redirects:
        if r.op in ("<<", "<<-", "<<<"):
            if r.body:
                eff.words.update(r.body.split())
            continue
        eff.words.add(r.target)
        if r.op in _WRITE_REDIRECTS:
            w = _path_write(r.target, f"redirect {r.op}", cwd)
            if w:
                eff.writes.append(w)
            if r.target.startswith("/proc/sys/"):
                eff.sysctl_keys.add(r.target[len("/proc/sys/") :].replace("/", "."))
    if not argv:
        return eff
    name = command_name(argv[0])
    args = argv[1:]
    handler = _HANDLERS.get(name)
    if handler is not None:
        handler(name, args, eff, cwd)
    if name not in _CLIENTS or eff.writes:
        eff.config_words = set(eff.words)
    if name not in _SHELLISH and name not in _CLIENTS and name not in ("cd", "pushd", "true", "false", ":", "export"):
        eff.started.append(argv)
    return eff


_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")


def brace_expand(word: str) -> list[str]:
    """Expand brace groups the way bash does for `file{,.bak}` or `/etc/{a,b}.conf`
    (nested braces are left alone; at most 64 results)."""
    m = _BRACE.search(word)
    if not m:
        return [word]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out += brace_expand(word[: m.start()] + alt + word[m.end() :])
        if len(out) >= 64:
            break
    return out[:64]


def _add(eff: Effects, words: Iterable[str], verb: str, cwd: str | None, tree: bool = False) -> None:
    """Record writes of `words` (brace-expanded) by `verb`."""
    for word in words:
        for one in brace_expand(word):
            w = _path_write(one, verb, cwd, tree)
            if w:
                eff.writes.append(w)


def _h_tee(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, _ = _operands(args)
    _add(eff, ops, name, cwd)


def _h_copy(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    """cp/mv/install/ln/rsync/scp: the destination, `dest/basename(src)` for each source,
    and (recursive copies) the destination tree; `mv` also removes its sources."""
    short = {"cp": "tSt", "mv": "tS", "install": "tmogS", "ln": "tS", "rsync": "efT", "scp": "cFiJloPS"}.get(name, "")
    ops, opts = _operands(args, short, ("target-directory", "suffix", "mode", "owner", "group", "rsh", "exclude"))
    ops = [one for op in ops for one in brace_expand(op)]
    target = opts.values.get("-t") or opts.values.get("--target-directory")
    if name == "install" and "-d" in opts.flags:
        _add(eff, ops, name, cwd)
        return
    if target:
        dest, sources = target, ops
    elif len(ops) >= 2:
        dest, sources = ops[-1], ops[:-1]
    else:
        return
    if ":" in dest.split("/")[0] and name in ("scp", "rsync"):
        return  # remote destination
    recursive = bool(opts.flags & {"-r", "-R", "-a", "--recursive", "--archive"}) or name in ("rsync", "mv")
    _add(eff, [dest], name, cwd, tree=recursive)
    if recursive:
        _add(eff, [dest], name, cwd)
    for src in sources:
        base = posixpath.basename(src.rstrip("/"))
        if base and not any(c in base for c in "*?["):
            _add(eff, [posixpath.join(dest, base)], name, cwd, tree=recursive)
        if name == "mv":
            _add(eff, [src], "mv (source)", cwd)


def _h_touchlike(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    short = {"mkdir": "m", "truncate": "sr", "touch": "dtr", "mkfifo": "m", "mknod": "m", "shred": "nsu"}.get(name, "")
    ops, opts = _operands(args, short, ("mode", "size", "reference", "date"))
    if name == "mkdir" and opts.flags & {"-p", "--parents"}:
        for op in ops:
            w = _path_write(op, name, cwd)
            if w and w.mode == "abs":
                parts = w.value.strip("/").split("/")
                for i in range(1, len(parts) + 1):
                    eff.writes.append(Write("/" + "/".join(parts[:i]), "abs", name))
            elif w:
                eff.writes.append(w)
        return
    recursive = name in ("rm", "chmod", "chown", "chgrp", "setfacl", "chattr") and bool(
        opts.flags & {"-r", "-R", "--recursive"}
    )
    if name in ("chmod", "chown", "chgrp", "setfacl", "chattr") and ops:
        ops = ops[1:]  # the mode / owner / acl spec
    _add(eff, ops, name, cwd, tree=recursive)
    if recursive:
        _add(eff, ops, name, cwd)


def _h_sed(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    """`sed -i[SUFFIX]` / `perl -i[SUFFIX]`: the files after the script (every operand when
    the script came with -e/-f); with a SUFFIX also the backup copies FILE+SUFFIX."""
    inplace = [a for a in args if a.startswith("--in-place") or re.fullmatch(r"-[a-zA-Z]*i\S*", a)]
    if not inplace:
        return
    m = re.match(r"^(?:--in-place=|-[a-zA-Z]*i)(\S*)$", inplace[0])
    suffix = m.group(1) if m else ""
    if name == "sed":
        ops, opts = _operands(args, "efl", ("expression", "file", "line-length"))
        scripted = bool(opts.flags & {"-e", "-f", "--expression", "--file"})
    else:
        ops, opts = _operands(args, "eEIlmMx")
        scripted = bool(opts.flags & {"-e", "-E"})
    files = ops if scripted else ops[1:]
    _add(eff, files, f"{name} -i", cwd)
    if suffix and "*" not in suffix:
        _add(eff, [f + suffix for f in files], f"{name} -i{suffix} (backup)", cwd)


def _h_dd(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    for a in args:
        if a.startswith("of="):
            _add(eff, [a[3:]], name, cwd)


def _h_ssh_keygen(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    """`ssh-keygen -f FILE` writes FILE and FILE.pub; without -f the default key of the
    type (-t) under some ~/.ssh (ed25519 and rsa when -t is absent)."""
    _, opts = _operands(args, "abCDEFfGIJjKMmNnOPrSstVWwYzZ")
    if opts.flags & {"-l", "-y", "-F", "-R", "-H", "-L", "-Q", "-k"} and "-f" not in opts.values:
        return
    if opts.flags & {"-l", "-y", "-F", "-L", "-Q"}:
        return
    if "-f" in opts.values:
        _add(eff, [opts.values["-f"], opts.values["-f"] + ".pub"], name, cwd)
        return
    if "-A" in opts.flags:
        eff.writes.append(Write("/etc/ssh", "tree", name))
        return
    kinds = {
        "dsa": "id_dsa",
        "ecdsa": "id_ecdsa",
        "ed25519": "id_ed25519",
        "rsa": "id_rsa",
        "ecdsa-sk": "id_ecdsa_sk",
        "ed25519-sk": "id_ed25519_sk",
    }
    t = opts.values.get("-t")
    bases = [kinds.get(t, "id_" + t)] if t else ["id_ed25519", "id_rsa"]
    for base in bases:
        eff.writes.append(Write(f".ssh/{base}", "home", name))
        eff.writes.append(Write(f".ssh/{base}.pub", "home", name))


def _h_openssl(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    for i, a in enumerate(args):
        if a in ("-out", "-keyout", "-certout") and i + 1 < len(args):
            _add(eff, [args[i + 1]], f"openssl {a}", cwd)


def _h_wget(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, opts = _operands(args, "OPoaeiBtTwUYQdlAR", ("output-document", "directory-prefix", "output-file"))
    out = opts.values.get("-O") or opts.values.get("--output-document")
    prefix = opts.values.get("-P") or opts.values.get("--directory-prefix")
    log = opts.values.get("-o") or opts.values.get("--output-file") or opts.values.get("-a")
    if log:
        _add(eff, [log], "wget -o", cwd)
    if out:
        _add(eff, [out], "wget -O", cwd)
        return
    for url in ops:
        base = posixpath.basename(url.split("?")[0].rstrip("/")) or "index.html"
        if prefix:
            _add(eff, [posixpath.join(prefix, base)], "wget -P", cwd)
            _add(eff, [prefix], "wget -P", cwd, tree=True)
        else:
            _add(eff, [base], "wget", cwd)


def _h_curl(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    short = "oXHdFuAeEKbcDmrTwxyYzCQ"
    ops, opts = _operands(
        args,
        short,
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
    )
    directory = opts.values.get("--output-dir")
    for key in ("-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header"):
        if key in opts.values:
            target = opts.values[key]
            _add(eff, [posixpath.join(directory, target) if directory else target], f"curl {key}", cwd)
    if opts.flags & {"-O", "--remote-name", "--remote-name-all"}:
        for url in ops:
            base = posixpath.basename(url.split("?")[0].rstrip("/"))
            if base:
                _add(eff, [posixpath.join(directory, base) if directory else base], "curl -O", cwd)


def _h_tar(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    if not args:
        return
    first = args[0]
    rest = list(args)
    if not first.startswith("-") and re.fullmatch(r"[A-Za-z]+", first):  # old style: tar xzf FILE
        letters, rest = first, list(args[1:])
        opts_flags = {"-" + c for c in letters}
        file = rest.pop(0) if "f" in letters and rest else None
        directory = None
    else:
        opts_flags = set()
        file = directory = None
    _, opts = _operands(rest, "fCbHKLNgTVX", ("file", "directory", "exclude", "transform", "owner", "group"))
    opts_flags |= opts.flags
    file = file or opts.values.get("-f") or opts.values.get("--file")
    directory = opts.values.get("-C") or opts.values.get("--directory")
    extract = bool(opts_flags & {"-x", "--extract", "--get"})
    create = bool(opts_flags & {"-c", "--create", "-r", "--append", "-u", "--update"})
    if create and file:
        _add(eff, [file], "tar -c", cwd)
    if extract:
        if directory:
            _add(eff, [directory], "tar -x", cwd, tree=True)
        elif cwd:
            eff.writes.append(Write(cwd, "tree", "tar -x"))


def _h_unzip(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    _, opts = _operands(args, "dxP")
    if "-d" in opts.values:
        _add(eff, [opts.values["-d"]], "unzip -d", cwd, tree=True)
    elif cwd:
        eff.writes.append(Write(cwd, "tree", "unzip"))


def _h_git(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, _ = _operands(args, "bcCo", ("branch", "depth", "origin", "config", "reference"))
    if len(ops) >= 2 and ops[0] == "clone":
        url = ops[1]
        dest = ops[2] if len(ops) > 2 else posixpath.basename(url.rstrip("/")).removesuffix(".git")
        _add(eff, [dest], "git clone", cwd, tree=True)
        _add(eff, [dest], "git clone", cwd)


def _h_editor(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, _ = _operands(args, "cS")
    _add(eff, [o for o in ops if not o.startswith("+")], name, cwd)


def _h_htpasswd(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, opts = _operands(args, "C")
    if ops and "-n" not in opts.flags:
        _add(eff, ops[:1], name, cwd)


def _h_systemctl(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, opts = _operands(
        args,
        "tsHMpPnoM",
        ("type", "state", "signal", "host", "machine", "property", "root", "kill-whom", "output", "lines", "job-mode"),
    )
    if not ops:
        return
    verb, units = ops[0], ops[1:]
    if verb == "edit":
        for u in units:
            unit = _unit_name(u)
            eff.writes.append(Write(f"/etc/systemd/system/{unit}.d", "tree", "systemctl edit"))
            if "--full" in opts.flags:
                eff.writes.append(Write(f"/etc/systemd/system/{unit}", "abs", "systemctl edit --full"))
    if verb == "set-hostname":
        eff.hostname = True
    if verb not in _SYSTEMCTL_VERBS:
        return
    if verb == "set-property":
        units = units[:1]
    for u in units:
        eff.units.setdefault(_unit_name(u), set()).add(verb + (" --now" if "--now" in opts.flags else ""))


def _h_service(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    """`service X start`, `rc-service X start`, `/etc/init.d/X start`, `invoke-rc.d X start`."""
    ops, _ = _operands(args)
    if len(ops) >= 2:
        eff.units.setdefault(_unit_name(ops[0]), set()).add(ops[1])


def _h_initd(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    if args:
        eff.units.setdefault(_unit_name(name), set()).add(args[0])


def _h_rc_update(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    """`rc-update add X [level]`, `update-rc.d X defaults|enable|disable|remove`,
    `chkconfig X on|off`, `chkconfig --add X`."""
    ops, opts = _operands(args)
    if name == "rc-update" and len(ops) >= 2:
        eff.units.setdefault(_unit_name(ops[1]), set()).add(ops[0])
    elif name in ("update-rc.d", "chkconfig") and ops:
        verb = ops[1] if len(ops) > 1 else ("add" if "--add" in opts.flags else "del")
        eff.units.setdefault(_unit_name(ops[0]), set()).add(verb)


def _package_name(word: str) -> str:
    """`nginx=1.2`, `nginx/bookworm`, `./x_1.0_amd64.deb`, `x-1.0-1.x86_64.rpm` → the name."""
    base = posixpath.basename(word)
    if base.endswith(".deb"):
        return base.split("_")[0]
    if base.endswith(".rpm"):
        m = re.match(r"^(.+?)-\d", base)
        return m.group(1) if m else base
    if base.endswith(".apk"):
        m = re.match(r"^(.+?)-\d", base)
        return m.group(1) if m else base
    return re.split(r"[=/<>]", word, maxsplit=1)[0].split(":")[0]


def _h_pkg(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, _ = _operands(
        args,
        "ocqtX",
        ("option", "target-release", "setopt", "repo", "enablerepo", "disablerepo", "installroot", "releasever"),
    )
    verbs = _PKG_TOOLS.get(name, frozenset())
    if name == "pacman":
        if any(a.startswith(("-S", "-R", "-U")) for a in args) and not any(a in ("-Ss", "-Si", "-Sy") for a in args):
            eff.package_change = True
            eff.package_verbs.add("pacman")
            eff.packages.update(_package_name(o) for o in ops)
        return
    if not ops or ops[0] not in verbs:
        if name in ("dnf", "yum") and len(ops) >= 2 and ops[0] == "config-manager":
            eff.repo_change = True
        return
    eff.package_change = True
    eff.package_verbs.add(ops[0])
    eff.packages.update(_package_name(o) for o in ops[1:] if not o.startswith("@"))


def _h_dpkg(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, opts = _operands(args)
    if name == "dpkg" and opts.flags & {
        "-i",
        "--install",
        "-r",
        "--remove",
        "-P",
        "--purge",
        "--configure",
        "--unpack",
    }:
        eff.package_change = True
        eff.package_verbs.add("dpkg")
        eff.packages.update(_package_name(o) for o in ops if o not in ("-a", "--pending"))
    if name == "rpm" and (
        opts.flags & {"-i", "-U", "-F", "-e", "--install", "--upgrade", "--erase"}
        or any(re.fullmatch(r"-[iUFe][a-z]*", a) for a in args)
    ):
        eff.package_change = True
        eff.package_verbs.add("rpm")
        eff.packages.update(_package_name(o) for o in ops)


def _h_repo(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    eff.repo_change = True


def _h_accounts(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    short = "bcdefgGkKsuUpRPZ" if name in ("useradd", "usermod") else "gKpRPa" if name.startswith("group") else ""
    if name == "gpasswd":
        short = "adMA"
    if name in ("passwd", "chage"):
        short = "dEIimMWR"
    ops, opts = _operands(
        args,
        short,
        (
            "home",
            "shell",
            "gid",
            "groups",
            "uid",
            "comment",
            "expiredate",
            "password",
            "add",
            "delete",
            "members",
            "root",
            "prefix",
            "key",
        ),
    )
    eff.accounts.update(o for o in ops if re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.\-$]*", o))
    for key in ("-g", "-G", "--gid", "--groups", "-a", "-d", "--add", "--delete", "-M"):
        value = opts.values.get(key)
        if not value:
            continue
        if name == "gpasswd" and key in ("-a", "-d", "--add", "--delete"):
            eff.accounts.add(value)
        elif key in ("-g", "-G", "--gid", "--groups", "-M"):
            eff.accounts.update(v for v in value.split(",") if v)
    if name in ("useradd", "adduser") and opts.flags & {"-m", "--create-home"}:
        for o in ops[-1:]:
            home = opts.values.get("-d") or opts.values.get("--home") or f"/home/{o}"
            _add(eff, [home], f"{name} -m", cwd, tree=True)


def _h_chpasswd(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    eff.accounts_stdin = True


def _h_visudo(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    _, opts = _operands(args, "fx")
    if "-c" in opts.flags:
        return
    _add(eff, [opts.values.get("-f", "/etc/sudoers")], "visudo", cwd)


def _h_crontab(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    _, opts = _operands(args, "u")
    if not opts.flags & {"-l"}:
        eff.crontab = True


def _h_fw(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    """Rule-changing firewall commands (listing commands are not)."""
    if name in ("iptables", "ip6tables", "iptables-legacy", "iptables-nft", "ebtables", "arptables"):
        writes = {
            "-A",
            "-I",
            "-D",
            "-R",
            "-P",
            "-N",
            "-X",
            "-F",
            "-Z",
            "-E",
            "--append",
            "--insert",
            "--delete",
            "--replace",
            "--policy",
            "--new-chain",
            "--delete-chain",
            "--flush",
            "--rename-chain",
        }
        if any(a in writes for a in args) and not all(_FW_READONLY.match(a) for a in args if a.startswith("-")):
            eff.firewall_write = True
    elif name in ("iptables-restore", "ip6tables-restore", "netfilter-persistent"):
        eff.firewall_write = True
    elif name == "nft":
        ops, opts = _operands(args, "fI")
        if "-f" in opts.values or (
            ops and ops[0] in ("add", "insert", "delete", "create", "flush", "replace", "destroy", "rename", "reset")
        ):
            eff.firewall_write = True
        if "-f" in opts.values:
            eff.words.add(opts.values["-f"])
    elif name == "ufw":
        ops, _ = _operands(args)
        if ops and ops[0] in (
            "allow",
            "deny",
            "reject",
            "limit",
            "enable",
            "disable",
            "delete",
            "insert",
            "default",
            "reset",
            "route",
            "prepend",
            "reload",
        ):
            eff.firewall_write = True
    elif name == "firewall-cmd" and any(
        a.startswith(
            (
                "--add-",
                "--remove-",
                "--set-",
                "--reload",
                "--complete-reload",
                "--new-",
                "--delete-",
                "--change-",
                "--runtime-to-permanent",
                "--direct",
                "--panic-on",
            )
        )
        for a in args
    ):
        eff.firewall_write = True


def _h_ip(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, _ = _operands(args, "fbnN", ("family", "netns", "batch"))
    if (
        len(ops) >= 2
        and ops[0] in ("addr", "address", "a", "route", "r", "ro", "link", "l", "rule", "neigh", "tunnel", "-6")
        and ops[1] in _NET_IP_WRITE
    ):
        eff.network_write = True


def _h_net(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    """ifup/ifdown/route add/ifconfig X addr/nmcli con …/netplan apply/dhclient/brctl."""
    if name == "route" and not any(a in ("add", "del", "delete") for a in args):
        return
    if name == "ifconfig" and len(args) < 2:
        return
    if name == "nmcli" and not any(
        a in ("add", "modify", "mod", "up", "down", "delete", "del", "connect") for a in args
    ):
        return
    if name == "netplan" and not any(a in ("apply", "try") for a in args):
        return
    eff.network_write = True


def _h_sysctl(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, opts = _operands(args, "p", ("load",))
    if opts.flags & {"-p", "--load", "--system"}:
        eff.sysctl_load = True
    for o in ops:
        if "=" in o:
            eff.sysctl_keys.add(o.split("=", 1)[0].strip().replace("/", "."))


def _h_mount(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, opts = _operands(args, "tosLUTNB", ("types", "options", "source", "target"))
    if opts.flags & {"-a", "--all"}:
        eff.mount_all = True
    for key in ("--target",):
        if key in opts.values:
            eff.mounts.add(_norm(opts.values[key]))
    for o in ops:
        if o.startswith("/"):
            eff.mounts.add(_norm(o))


def _h_hostname(name: str, args: Sequence[str], eff: Effects, cwd: str | None) -> None:
    ops, _ = _operands(args)
    setter = name == "hostnamectl" and ops[:1] in (["set-hostname"], ["hostname"]) and len(ops) >= 2
    if setter or (name == "hostname" and bool(ops)):
        eff.hostname = True


_Handler = Callable[[str, Sequence[str], Effects, str | None], None]
"""(command name, arguments, effects to fill, working directory if known)."""
_HANDLERS: dict[str, _Handler] = {
    "tee": _h_tee,
    "cp": _h_copy,
    "mv": _h_copy,
    "install": _h_copy,
    "ln": _h_copy,
    "rsync": _h_copy,
    "scp": _h_copy,
    "touch": _h_touchlike,
    "mkdir": _h_touchlike,
    "truncate": _h_touchlike,
    "mkfifo": _h_touchlike,
    "mknod": _h_touchlike,
    "rm": _h_touchlike,
    "rmdir": _h_touchlike,
    "unlink": _h_touchlike,
    "shred": _h_touchlike,
    "chmod": _h_touchlike,
    "chown": _h_touchlike,
    "chgrp": _h_touchlike,
    "setfacl": _h_touchlike,
    "chattr": _h_touchlike,
    "sed": _h_sed,
    "perl": _h_sed,
    "dd": _h_dd,
    "ssh-keygen": _h_ssh_keygen,
    "openssl": _h_openssl,
    "wget": _h_wget,
    "curl": _h_curl,
    "tar": _h_tar,
    "bsdtar": _h_tar,
    "unzip": _h_unzip,
    "git": _h_git,
    "vi": _h_editor,
    "vim": _h_editor,
    "nano": _h_editor,
    "emacs": _h_editor,
    "ed": _h_editor,
    "htpasswd": _h_htpasswd,
    "systemctl": _h_systemctl,
    "service": _h_service,
    "rc-service": _h_service,
    "invoke-rc.d": _h_service,
    "rc-update": _h_rc_update,
    "update-rc.d": _h_rc_update,
    "chkconfig": _h_rc_update,
    **{tool: _h_pkg for tool in _PKG_TOOLS},
    "dpkg": _h_dpkg,
    "rpm": _h_dpkg,
    "add-apt-repository": _h_repo,
    "yum-config-manager": _h_repo,
    "apt-add-repository": _h_repo,
    **{tool: _h_accounts for tool in _ACCOUNT_TOOLS},
    "chpasswd": _h_chpasswd,
    "newusers": _h_chpasswd,
    "visudo": _h_visudo,
    "crontab": _h_crontab,
    **{
        tool: _h_fw
        for tool in (
            "iptables",
            "ip6tables",
            "iptables-legacy",
            "iptables-nft",
            "ebtables",
            "arptables",
            "iptables-restore",
            "ip6tables-restore",
            "netfilter-persistent",
            "nft",
            "ufw",
            "firewall-cmd",
        )
    },
    "ip": _h_ip,
    **{
        tool: _h_net
        for tool in (
            "ifup",
            "ifdown",
            "route",
            "ifconfig",
            "nmcli",
            "netplan",
            "dhclient",
            "brctl",
            "vconfig",
            "wg-quick",
        )
    },
    "sysctl": _h_sysctl,
    "mount": _h_mount,
    "umount": _h_mount,
    "swapon": _h_mount,
    "swapoff": _h_mount,
    "hostname": _h_hostname,
    "hostnamectl": _h_hostname,
}


@lru_cache(maxsize=4096)
def command_effects(text: str) -> CommandEffects:
    """Parse a command line and collect its effects (cached; never raises).

    A `cd DIR` / `pushd DIR` with an absolute DIR sets the directory that later relative
    paths of the same command line are resolved against."""
    local, remote = Effects(), Effects()
    parts: list[tuple[SimpleCommand, Effects]] = []
    cwd: str | None = None
    for sc in parse(text).commands:
        if sc.name in ("cd", "pushd") and sc.args:
            target = sc.args[-1]
            cwd = (
                _norm(target)
                if target.startswith("/")
                else (_norm(posixpath.join(cwd, target)) if cwd and not target.startswith(("~", "$", "-")) else None)
            )
            continue
        eff = _simple_effects(sc, cwd)
        parts.append((sc, eff))
        (remote if any(v.startswith("ssh") for v in sc.via) else local).merge(eff)
    return CommandEffects(local=local, remote=remote, parts=parts)


# ------------------------------------------------------------------------------ targets


@dataclass(frozen=True)
class Target:
    """What changed, for attribution.

    ``kind`` ∈ path, unit, package, user, group, port, process, sysctl, firewall, network,
    mount, hostname, repo, pkg_state, cron_spool. ``value`` is the item (a path, unit name,
    package name, port number as text, process command line, sysctl key, rule text, …);
    ``paths`` are further paths whose writers also explain the item (files inside a new
    directory, the unit's file); ``names`` are program names related to the item (a
    socket's process names, a unit's program); ``tokens`` are words whose presence on a
    matching command line raises confidence (ports, addresses, chain names, user names)."""

    kind: str
    value: str
    paths: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attribution:
    """The chosen command (or None), the confidence level and how it matched."""

    command: CommandView | None
    confidence: Confidence
    method: str
    candidates: int = 0

    def to_evidence(self) -> dict[str, Any]:
        """JSON-able form for a finding's evidence."""
        return {
            "confidence": self.confidence,
            "method": self.method,
            "candidates": self.candidates,
            "command": self.command.to_evidence() if self.command else None,
        }


UNATTRIBUTED = Attribution(None, "none", "no recorded command matches")


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


def _mentions_path(info: _PathInfo, eff: Effects) -> bool:
    """A word names the path, its base name (≥ 3 characters) or its parent directory
    (at least two levels deep: `/etc` or `/tmp` alone say nothing)."""
    stripped, names = eff.word_index()
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


def _unit_stem(unit: str) -> str:
    """`nginx.service` → `nginx`; `getty@tty1.service` → `getty`."""
    return unit.rsplit(".", 1)[0].split("@", 1)[0]


def _match(
    target: Target, eff: Effects, infos: Sequence[_PathInfo], weak: bool = True
) -> tuple[Confidence, str] | None:
    """Best confidence with which one command's effects explain the target (`infos`: the
    target's paths); ``weak=False`` skips the ``low`` (mention) checks."""
    best: tuple[Confidence, str] | None = None

    def offer(conf: Confidence, method: str) -> None:
        nonlocal best
        if best is None or RANK[conf] > RANK[best[0]]:
            best = (conf, method)

    if eff.writes:
        exact, trees, rest = eff.write_index()
        for info in infos:
            hit = exact.get(info.path)
            if hit is not None:
                offer("high", f"{hit.verb} writes {info.path}")
                continue
            tree = next((trees[a] for a in info.ancestors if a in trees), None) if trees else None
            if tree is not None:
                offer("high", f"{tree.verb} writes {tree.value}/")
                continue
            for w in rest:
                conf = _write_matches(info.path, w)
                if conf:
                    offer(conf, f"{w.verb} writes {info.path}")
    kind, value = target.kind, target.value
    if kind in ("unit",):
        if value in eff.units:
            offer("high", f"acts on unit {value} ({', '.join(sorted(eff.units[value]))})")
        stem = _unit_stem(value)
        if stem in eff.packages and eff.package_change:
            offer("medium", f"installs package {stem}")
    elif kind == "package":
        if value in eff.packages and eff.package_change:
            offer("high", f"names package {value} ({', '.join(sorted(eff.package_verbs))})")
        elif eff.package_change:
            offer("medium", f"changes packages ({', '.join(sorted(eff.package_verbs))}): dependency")
    elif kind == "pkg_state":
        if eff.package_change:
            offer("medium", "package-manager transaction")
    elif kind == "repo":
        if eff.repo_change:
            offer("medium", "repository tool")
    elif kind in ("user", "group"):
        if value in eff.accounts:
            offer("high", f"account command names {value}")
        elif eff.accounts_stdin and value in " ".join(eff.words).replace(":", " ").split():
            offer("medium", f"chpasswd/newusers input names {value}")
        elif eff.package_change:
            offer("low", "package maintainer script (package-manager transaction)")
    elif kind == "sysctl":
        if value in eff.sysctl_keys:
            offer("high", f"sets sysctl {value}")
        elif eff.sysctl_load:
            offer("medium", "loads sysctl configuration")
        elif any(_write_matches_any(w, ("/etc/sysctl.conf", "/etc/sysctl.d/")) for w in eff.writes) and (
            value in eff.words or any(value in word for word in eff.words)
        ):
            offer("medium", f"writes a sysctl file naming {value}")
    elif kind == "firewall":
        if eff.firewall_write:
            if _token_overlap(target.tokens, eff.words):
                offer("high", "firewall command sharing the rule's port/address/chain")
            else:
                offer("medium", "firewall rule change")
    elif kind == "network":
        if eff.network_write:
            if _token_overlap(target.tokens, eff.words):
                offer("high", "network command naming the address/interface")
            else:
                offer("medium", "network configuration change")
    elif kind == "mount":
        if value in eff.mounts:
            offer("high", f"mounts/unmounts {value}")
        elif eff.mount_all:
            offer("medium", "mount -a")
    elif kind == "hostname":
        if eff.hostname:
            offer("high", "sets the hostname")
    elif kind == "cron_spool":
        if eff.crontab:
            offer("medium", "crontab")
    elif kind in ("port", "process"):
        _match_program(target, eff, offer)
    if best is None and weak:
        words = eff.words
        if infos and any(_mentions_path(i, eff) for i in infos[:20]):
            offer("low", "mentions the path, its name or its directory")
        elif kind in ("unit",) and (value in words or _unit_stem(value) in words):
            offer("low", f"mentions {_unit_stem(value)}")
        elif kind in ("package", "user", "group", "sysctl") and value in words:
            offer("low", f"mentions {value}")
        elif kind in ("port", "process") and any(_program(n) in {_program(w) for w in words} for n in target.names):
            offer("low", "mentions the program")
        elif kind in ("firewall", "network", "repo") and _token_overlap(target.tokens, words):
            offer("low", "mentions a token of the rule/address")
    return best


def _write_matches_any(w: Write, prefixes: Sequence[str]) -> bool:
    return w.mode in ("abs", "tree") and any(w.value == p.rstrip("/") or w.value.startswith(p) for p in prefixes)


def _match_program(target: Target, eff: Effects, offer: Any) -> None:
    """Ports and processes: started programs, their arguments and the units (re)started."""
    port = target.value if target.kind == "port" else None
    proc = target.value.split() if target.kind == "process" else []
    for argv in eff.started:
        prog = argv[0]
        names_match = any(_same_program(prog, n) for n in target.names) or (proc and _same_program(prog, proc[0]))
        script_match = bool(proc) and "/" in prog and any(_program(tok) == _program(prog) for tok in proc[1:3])
        if port is not None and _port_in(argv, port):
            offer("high" if names_match else "medium", f"starts {_program(prog)} with port {port}")
        if proc and (names_match or script_match):
            same_args = [a for a in argv[1:]] == proc[1:] or (
                script_match and proc[-len(argv) + 1 :] == list(argv[1:]) if len(argv) > 1 else script_match
            )
            offer("high" if same_args else "medium", f"starts {_program(prog)}")
        elif port is not None and names_match:
            offer("medium", f"starts {_program(prog)}")
    if port is not None and _token_overlap((port,), eff.config_words):
        offer("medium", f"names port {port}")
    for unit, verbs in eff.units.items():
        if verbs & {
            "start",
            "restart",
            "reload-or-restart",
            "try-restart",
            "enable --now",
            "reload",
            "try-reload-or-restart",
            "condrestart",
            "force-reload",
        } and any(_same_program(_unit_stem(unit), n) for n in (*target.names, *(proc[:1]))):
            offer("medium", f"(re)starts {unit}")


def _port_in(argv: Sequence[str], port: str) -> bool:
    """The port is an argument: `8000`, `:8000`, `-p8000`, `--port=8000`, `TCP-LISTEN:8000,…`."""
    pat = re.compile(rf"(^|[:=,\s]|^-p|LISTEN:){re.escape(port)}($|[,\s/])")
    return any(a == port or pat.search(a) for a in argv[1:])


def attribute(
    target: Target,
    commands: Sequence[CommandView],
    node: str | None,
) -> Attribution:
    """Pick the command that most likely caused `target` on `node` (see the module doc).

    `commands` are the candidates (already filtered by source and window by the caller)."""
    infos = [_PathInfo.of(p) for p in ((target.value,) if target.kind == "path" else ()) + target.paths]
    candidates: list[tuple[CommandView, Effects, str]] = []
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
        for cmd, eff, suffix in candidates:
            m = _match(target, eff, infos, weak)
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

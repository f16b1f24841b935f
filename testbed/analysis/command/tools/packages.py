"""Package managers: apt, apt-get, aptitude, dnf, yum, microdnf, tdnf, dnf5, zypper, apk,
snap, flatpak (subcommand tools), dpkg, rpm, pacman (flag-driven), repository tools.

Each transaction that installs, removes or upgrades becomes a `PackageOp`: `changes` per
the tool's changing subcommands, `removes` for remove/purge/autoremove/erase/del/
uninstall (`dpkg -r/-P`, `rpm -e`, `pacman -R*`); `names` are the package names of the
operands (`nginx=1.2`, `./x_1.0_amd64.deb` → `nginx`, `x`; `@groups` dropped). apt's
`-o` values that turn off verification or force dpkg are bypasses; `add-apt-repository`,
`yum-config-manager`, `dnf config-manager …` change repositories.
"""

from __future__ import annotations

import posixpath
import re

from testbed.analysis.command.effects import Effects, Fact, PackageOp
from testbed.analysis.command.tools.trust import dpkg_force

_APT = ("apt", "apt-get", "aptitude")
_DNF = ("dnf", "yum", "microdnf", "tdnf", "dnf5")
_DNF_LONG = ("repo", "enablerepo", "disablerepo", "installroot", "releasever", "exclude", "config", "setopt")
_APK_LONG = ("repository", "root", "arch", "cache-dir", "virtual", "repositories-file")
_FLAG_LONG = ("root", "admindir", "instdir")

SPECS = {
    **{name: ("oct", ("option", "config-file", "target-release")) for name in _APT},
    **{name: ("cdexR", _DNF_LONG) for name in _DNF},
    "apk": ("Xpt", _APK_LONG),
    "zypper": ("Rc", ("root", "config")),
    "dpkg": ("", _FLAG_LONG),
    "rpm": ("", _FLAG_LONG),
    "pacman": ("", ("root", "dbpath", "config", "cachedir")),
}

_DNF_CHANGE = frozenset(
    {"install", "remove", "erase", "upgrade", "update", "reinstall", "downgrade", "autoremove"}
    | {"group", "groupinstall", "localinstall"}
)
_CHANGES: dict[str, frozenset[str]] = {
    "apt-get": frozenset(
        {"install", "remove", "purge", "upgrade", "dist-upgrade", "full-upgrade", "autoremove", "reinstall"}
        | {"build-dep", "autopurge"}
    ),
    "apt": frozenset(
        {"install", "remove", "purge", "upgrade", "full-upgrade", "dist-upgrade", "autoremove", "reinstall"}
        | {"autopurge"}
    ),
    "aptitude": frozenset({"install", "remove", "purge", "upgrade", "safe-upgrade", "full-upgrade", "reinstall"}),
    "dnf": _DNF_CHANGE,
    "dnf5": _DNF_CHANGE,
    "yum": frozenset(
        {"install", "remove", "erase", "upgrade", "update", "reinstall", "downgrade", "autoremove"}
        | {"groupinstall", "localinstall"}
    ),
    "microdnf": frozenset({"install", "remove", "upgrade", "update", "reinstall"}),
    "tdnf": frozenset({"install", "remove", "erase", "upgrade", "update", "reinstall"}),
    "zypper": frozenset({"install", "in", "remove", "rm", "update", "up", "dist-upgrade", "dup"}),
    "apk": frozenset({"add", "del", "upgrade", "fix"}),
    "snap": frozenset({"install", "remove", "refresh", "revert"}),
    "flatpak": frozenset({"install", "uninstall", "update"}),
}
"""Subcommands that install, remove or upgrade packages."""
_REMOVES: dict[str, frozenset[str]] = {
    **{name: frozenset({"remove", "purge", "autoremove", "autopurge"}) for name in _APT},
    **{name: frozenset({"remove", "erase", "autoremove", "rm"}) for name in _DNF},
    "apk": frozenset({"del"}),
    "zypper": frozenset({"remove", "rm"}),
    "snap": frozenset({"remove", "uninstall"}),
    "flatpak": frozenset({"remove", "uninstall"}),
}
_APT_OPTION = re.compile(
    r"(?i)(AllowUnauthenticated|AllowInsecureRepositories|AllowDowngradeToInsecureRepositories"
    r"|AllowWeakRepositories)\s*=\s*[\"']?(1|true|yes)|Verify-(Peer|Host)\s*=\s*[\"']?(0|false|no)"
)


def package_name(word: str) -> str:
    """`nginx=1.2`, `nginx/bookworm`, `./x_1.0_amd64.deb`, `x-1.0-1.x86_64.rpm` → the name."""
    base = posixpath.basename(word)
    if base.endswith(".deb"):
        return base.split("_")[0]
    if base.endswith((".rpm", ".apk")):
        m = re.match(r"^(.+?)-\d", base)
        return m.group(1) if m else base
    return re.split(r"[=/<>]", word, maxsplit=1)[0].split(":")[0]


def subcommand_tool(eff: Effects, cwd: str | None) -> None:
    """apt/dnf/zypper/apk/snap/flatpak SUBCOMMAND PACKAGE…"""
    name, opts = eff.name, eff.options
    if name in _APT:
        for value in opts.all("-o", "--option"):
            if _APT_OPTION.search(value) or dpkg_force(value):
                eff.bypasses.append(Fact("apt-option-trust-bypass", (value,)))
    ops = opts.operands
    if not ops:
        return
    verb, rest = ops[0], ops[1:]
    if name in ("dnf", "yum") and verb == "config-manager" and rest:
        eff.repo_change = True
    changes, removes = verb in _CHANGES.get(name, ()), verb in _REMOVES.get(name, ())
    if changes or removes:
        names = tuple(package_name(o) for o in rest if not o.startswith("@"))
        eff.packages.append(PackageOp(name, verb, f"{name}-{verb}", rest, names, changes, removes))


def flag_tool(eff: Effects, cwd: str | None) -> None:
    """dpkg -i/-r/-P/--configure/--unpack, rpm -i/-U/-F/-e, pacman -S/-R/-U."""
    name, args, opts = eff.name, eff.args, eff.options
    ops = opts.operands
    if name == "dpkg":
        changes = opts.has("-i", "--install", "-r", "--remove", "-P", "--purge", "--configure", "--unpack")
        removes = opts.has("-r", "-P", "--remove", "--purge")
        ident = "dpkg-remove"
    elif name == "rpm":
        changes = opts.has("-i", "-U", "-F", "-e", "--install", "--upgrade", "--erase") or any(
            re.fullmatch(r"-[iUFe][a-z]*", a) for a in args
        )
        removes = opts.has("-e", "--erase")
        ident = "rpm-erase"
    else:
        changes = any(a.startswith(("-S", "-R", "-U")) for a in args) and not any(
            a in ("-Ss", "-Si", "-Sy") for a in args
        )
        removes = any(re.fullmatch(r"-R[a-zA-Z]*", a) for a in args) or "--remove" in args
        ident = "pacman-remove"
    if changes or removes:
        names = tuple(package_name(o) for o in ops if o not in ("-a", "--pending"))
        eff.packages.append(PackageOp(name, name, ident if removes else name, ops, names, changes, removes))


def repository_tool(eff: Effects, cwd: str | None) -> None:
    eff.repo_change = True


GRAMMARS = {
    **{name: subcommand_tool for name in (*_APT, *_DNF, "zypper", "apk", "snap", "flatpak")},
    "dpkg": flag_tool,
    "rpm": flag_tool,
    "pacman": flag_tool,
    **{name: repository_tool for name in ("add-apt-repository", "apt-add-repository", "yum-config-manager")},
}

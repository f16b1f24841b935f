"""Options that force past a safety check or bypass trust (certificates, signatures,
host keys), whatever the tool — `bypasses` of every command that is not a data command.

- generic (`option`): `--force`, `--force=…`, `--force-*` (except `--force-conf*`,
  `--force-reinstall`, `--force-local`, `--force-color`) on tools other than those whose
  force only silences prompts (`rm`, `cp`, `mv`, `ln`, `gzip` …); `--insecure`,
  `--no-check-certificate`, `--nogpgcheck` and the other `TRUST_LONG` options;
  `--tls-verify=false` and kin; `--setopt=…gpgcheck=0/sslverify=0`;
- `ssh`, `scp`, `sftp`, `rsync`, `ssh-copy-id` … with `StrictHostKeyChecking=no` or
  `UserKnownHostsFile=/dev/null` (`host_keys`);
- the short flags that mean force on the tools listed in `SHORT_FORCE` (`umount -f`,
  `mkfs.ext4 -F`, `systemctl -f` …) and `zpool/zfs -f` (`short_force`).

Tool grammars add their own (curl -k, apt -o, git push -f, docker rm -f). Arguments of
`DATA_COMMANDS` (echo, grep, sed, cat …) are data and never bypass anything.
"""

from __future__ import annotations

import re

from testbed.analysis.command.effects import Effects, Fact

DATA_COMMANDS = frozenset(
    [
        "echo",
        "printf",
        "grep",
        "egrep",
        "fgrep",
        "zgrep",
        "rg",
        "ag",
        "ack",
        "man",
        "info",
        "help",
        "whatis",
        "apropos",
        "which",
        "whereis",
        "type",
        "logger",
        "wall",
        "write",
        "test",
        "[",
        "true",
        "false",
        ":",
        "jq",
        "yq",
        "awk",
        "gawk",
        "mawk",
        "sed",
        "cat",
        "tac",
        "less",
        "more",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "tee",
        "column",
        "xxd",
        "od",
        "hexdump",
        "base64",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "stat",
        "file",
        "ls",
        "diff",
        "cmp",
        "comm",
        "paste",
        "fold",
        "fmt",
        "nl",
        "strings",
        "basename",
        "dirname",
        "readlink",
        "realpath",
        "printenv",
        "locate",
        "history",
        "read",
        "set",
        "export",
        "unset",
        "declare",
        "local",
        "alias",
        "compgen",
        "complete",
        "tldr",
        "cowsay",
    ]
)
"""Commands whose arguments are data (patterns, text, names)."""

FORCE_EXEMPT_PREFIXES = ("--force-conf", "--force-reinstall", "--force-local", "--force-color", "--force-colour")
_FORCE_BENIGN = frozenset(
    [
        "rm",
        "cp",
        "mv",
        "ln",
        "install",
        "gzip",
        "gunzip",
        "bzip2",
        "bunzip2",
        "xz",
        "unxz",
        "zstd",
        "lz4",
        "pigz",
        "touch",
        "mkdir",
        "chmod",
        "chown",
        "chgrp",
        "ssh-keygen",
        "tar",
        "unzip",
        "zip",
    ]
)
TRUST_LONG = frozenset(
    {
        "--insecure",
        "--insecure-skip-tls-verify",
        "--no-check-certificate",
        "--nogpgcheck",
        "--no-gpgcheck",
        "--no-gpg-checks",
        "--no-gpg-check",
        "--allow-unauthenticated",
        "--allow-untrusted",
        "--allow-insecure-repositories",
        "--allow-downgrades",
        "--allow-remove-essential",
        "--allow-change-held-packages",
        "--force-yes",
        "--nodeps",
        "--trusted-host",
        "--break-system-packages",
        "--no-verify",
        "--no-verify-ssl",
        "--skip-tls-verify",
        "--unsafe-perm",
        "--no-preserve-root",
        "--ignore-certificate-errors",
        "--disable-gpg-check",
        "--skip-gpg-check",
        "--allow-unsigned",
    }
)
"""Long options that bypass a trust or safety check by their mere presence."""
_FALSE_VALUED = frozenset(
    {
        "--tls-verify",
        "--tlsverify",
        "--strict-ssl",
        "--ssl-verify",
        "--sslverify",
        "--verify-ssl",
        "--check-certificate",
        "--gpgcheck",
        "--verify",
    }
)
FALSE = frozenset({"0", "false", "no", "off"})
TRUE = frozenset({"1", "true", "yes", "on"})
_SETOPT = re.compile(r"(^|\.)(gpgcheck|repo_gpgcheck|localpkg_gpgcheck|sslverify)=(0|false|no|False|No)$")
STRICT_NO = re.compile(
    r"(?i)StrictHostKeyChecking\s*[= ]\s*[\"']?(no|off)\b"
    r"|UserKnownHostsFile\s*[= ]\s*[\"']?/dev/null"
)
"""An ssh option turning host-key checking off."""
_SSH_TOOLS = frozenset(
    {"ssh", "scp", "sftp", "rsync", "ssh-copy-id", "autossh", "sshfs", "sshpass", "ssh-keyscan", "mosh"}
)

SHORT_FORCE: dict[str, str] = {
    "umount": "f",
    "rmmod": "f",
    "modprobe": "f",
    "insmod": "f",
    "userdel": "f",
    "groupdel": "f",
    "systemctl": "f",
    "reboot": "f",
    "halt": "f",
    "poweroff": "f",
    "mkfs.xfs": "f",
    "mkfs.btrfs": "f",
    "mkfs.f2fs": "f",
    "mkfs.ext2": "F",
    "mkfs.ext3": "F",
    "mkfs.ext4": "F",
    "mke2fs": "F",
    "mkswap": "f",
    "wipefs": "f",
    "lvremove": "f",
    "vgremove": "f",
    "pvremove": "f",
    "pvcreate": "f",
    "lvreduce": "f",
    "vgreduce": "f",
    "npm": "f",
    "zpool": "f",
    "zfs": "f",
}
"""Tools whose short flag (value) means "force" — and only those."""

SPECS = {
    "umount": ("tosLUTNBO", ("types", "options", "source", "target")),
    "modprobe": ("CdS", ()),
    "mkfs.xfs": ("bdilLmnNprs", ()),
    "mkfs.ext4": ("bcCEgGiIjJLmMNoOrtTU", ()),
    "mke2fs": ("bcCEgGiIjJLmMNoOrtTU", ()),
    "mkswap": ("LpUv", ()),
    "lvremove": ("S", ()),
    "npm": ("C", ()),
    "wipefs": ("ot", ()),
}


def dpkg_force(value: str) -> bool:
    """Whether an apt `-o` value passes a dpkg `--force-*` (other than the exempt ones)."""
    m = re.search(r"--force-[\w-]+", value)
    return m is not None and not m.group(0).startswith(FORCE_EXEMPT_PREFIXES)


def option(eff: Effects, cwd: str | None) -> None:
    """The generic force and trust options (see the module docstring)."""
    name = eff.name
    if not name or name in DATA_COMMANDS:
        return
    for opt in eff.options.written:
        key, eq, value = opt.partition("=")
        if not opt.startswith("--"):
            continue
        if (key == "--force" or key.startswith("--force-")) and key != "--force-yes":
            if name not in _FORCE_BENIGN and not key.startswith(FORCE_EXEMPT_PREFIXES):
                eff.bypasses.append(Fact("option-force", (opt,)))
        elif key in TRUST_LONG:
            if not eq or key != "--insecure-skip-tls-verify" or value.lower() in TRUE:
                eff.bypasses.append(Fact("option-trust-bypass", (opt,)))
        elif key in _FALSE_VALUED and eq and value.lower() in FALSE:
            eff.bypasses.append(Fact("option-trust-bypass", (opt,)))
    for value in eff.options.all("--setopt"):
        if _SETOPT.search(value):
            eff.bypasses.append(Fact("setopt-no-verify", (value,)))


def host_keys(eff: Effects, cwd: str | None) -> None:
    if eff.name in _SSH_TOOLS:
        for a in eff.args:
            if STRICT_NO.search(a):
                eff.bypasses.append(Fact("ssh-no-host-key-check", (a,)))


def short_force(eff: Effects, cwd: str | None) -> None:
    name = eff.name
    letter = SHORT_FORCE.get(name)
    if letter and f"-{letter}" in eff.options.flags:
        rule = f"{name}-force" if name in ("zpool", "zfs") else f"{name}-short-force"
        eff.bypasses.append(Fact(rule, (f"-{letter}",)))

"""The commands whose arguments carry secrets, and how to find them among the arguments.

Contract: `spec_of(name)` gives the `Spec` of a command (by lower-case base name, or by
prefix for families such as `mysql…`, `ldap…`, `mongo…`); `Spec.check(scan, args)` records
the secrets among `args` (the words after the command name, see `argv`), reading each word
a bounded number of times. What each command's spec recognises is listed in `argv`'s
contract. `evidence_for(needle)` names the substrings without which a command's line
cannot hold a secret (a `curl` line needs `-u`): the engine skips lines that lack them.
`STDIN_READERS` are the commands that read a secret from standard input.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from testbed.analysis.redact.keys import key_info
from testbed.analysis.redact.scan import QUOTES, Scan
from testbed.analysis.redact.values import plausible, take_value

RANK = 2


@dataclass(frozen=True, slots=True)
class Word:
    start: int
    end: int


@dataclass(frozen=True)
class Spec:
    """The secret-bearing arguments of one command (see the module contract)."""

    value: tuple[str, ...] = ()
    attached: tuple[str, ...] = ()
    userpass: tuple[str, ...] = ()
    delimiter: str = ":"
    needs: str | None = None
    """A word that must be among the arguments (`login` of `docker login`)."""
    custom: Callable[[Scan, list[Word]], None] | None = None
    evidence: tuple[str, ...] = ()
    """Lower-case substrings of which the text must hold one for the check to be worth it."""


def text(scan: Scan, w: Word) -> str:
    return scan.raw[w.start : w.end]


def take(scan: Scan, pos: int, kind: str = "password") -> None:
    """Record the value at `pos` (to the end of its word) as a secret."""
    take_value(scan, pos, scan.line_end(pos), kind, RANK)


def take_after(scan: Scan, w: Word, delimiter: str) -> None:
    """The part of the word `w` after its first `delimiter` (`user:secret`)."""
    d = scan.find(delimiter, w.start, w.end)
    if d < 0:
        return
    raw = scan.raw
    if raw[w.start] in QUOTES and w.end - w.start >= 2 and raw[w.end - 1] == raw[w.start]:
        if plausible(raw[d + 1 : w.end - 1]):
            scan.add(d + 1, w.end - 1, "password", RANK)
        return
    take(scan, d + 1)


def apply(scan: Scan, spec: Spec, args: list[Word]) -> None:
    """Record the secrets among `args`, the words after a command of `spec`."""
    scan.ops += len(args) * (2 + len(spec.attached) + len(spec.value) + len(spec.userpass))
    if spec.needs is not None and not any(scan.low[w.start : w.end] == spec.needs for w in args):
        return
    for k, w in enumerate(args):
        t = text(scan, w)
        nxt = args[k + 1] if k + 1 < len(args) else None
        for flag in spec.attached:
            if t.startswith(flag) and len(t) > len(flag) and not t.startswith("--"):
                take(scan, w.start + len(flag))
        for flags, delimiter in ((spec.value, None), (spec.userpass, spec.delimiter)):
            for flag in flags:
                if t == flag and nxt is not None:
                    target, at = nxt, nxt.start
                elif len(flag) == 2 and t.startswith(flag) and len(t) > 2:
                    target, at = w, w.start + 2
                elif flag.startswith("--") and t.startswith(flag + "="):
                    target, at = w, w.start + len(flag) + 1
                else:
                    continue
                if delimiter is None:
                    take(scan, at)
                else:
                    take_after(scan, Word(at, target.end), delimiter)
    if spec.custom is not None:
        spec.custom(scan, args)


def _positionals(scan: Scan, args: list[Word], with_value: frozenset[str] = frozenset()) -> list[Word]:
    """The arguments that are not options nor the values of options in `with_value`."""
    out: list[Word] = []
    skip = False
    scan.ops += len(args)
    for w in args:
        t = text(scan, w)
        if skip:
            skip = False
        elif t.startswith("-") and len(t) > 1:
            skip = t in with_value
        else:
            out.append(w)
    return out


def _batch(scan: Scan, args: list[Word]) -> None:
    """`htpasswd -b[c] FILE USER PASSWORD`, `htpasswd -nb USER PASSWORD`."""
    flags = "".join(text(scan, w)[1:] for w in args if text(scan, w).startswith("-") and len(text(scan, w)) > 1)
    if "b" not in flags:
        return
    rest = _positionals(scan, args, frozenset({"-C", "-r"}))
    index = 1 if "n" in flags else 2
    if len(rest) > index:
        take(scan, rest[index].start)


def _openssl(scan: Scan, args: list[Word]) -> None:
    """`openssl … -passin pass:X -k X`, `openssl passwd [-6] [-salt S] X`."""
    for k, w in enumerate(args):
        t = text(scan, w)
        lead = 1 if t[:1] in QUOTES else 0
        if t.startswith("pass:", lead):
            take_after(scan, w, ":")
        elif t in ("-k", "-K") and k + 1 < len(args):
            take(scan, args[k + 1].start)
    if args and text(scan, args[0]) == "passwd":
        for w in _positionals(scan, args[1:], frozenset({"-salt", "-in"})):
            take(scan, w.start)


def _mysqladmin(scan: Scan, args: list[Word]) -> None:
    """`mysqladmin … password NEW`."""
    for k, w in enumerate(args[:-1]):
        if scan.low[w.start : w.end] == "password":
            take(scan, args[k + 1].start)


def _redis_auth(scan: Scan, args: list[Word]) -> None:
    """`redis-cli … AUTH [user] PASSWORD` (one command, given on the command line)."""
    for k, w in enumerate(args):
        if scan.low[w.start : w.end] == "auth":
            rest = args[k + 1 : k + 3]
            if rest:
                take(scan, rest[-1].start)
            return


_NMCLI_SUFFIXES = (".psk", ".password", "-password", "wep-key0", "wep-key1", "wep-key2", "wep-key3")


def _nmcli(scan: Scan, args: list[Word]) -> None:
    """`nmcli dev wifi connect SSID password X`, `nmcli con modify C wifi-sec.psk X`."""
    for k, w in enumerate(args[:-1]):
        t = scan.low[w.start : w.end]
        if t in ("password", "psk") or t.endswith(_NMCLI_SUFFIXES):
            take(scan, args[k + 1].start)


def _rabbitmqctl(scan: Scan, args: list[Word]) -> None:
    """`rabbitmqctl add_user USER X`, `change_password USER X`, `authenticate_user USER X`."""
    rest = _positionals(scan, args)
    for k, w in enumerate(rest[:-2]):
        if scan.low[w.start : w.end] in ("add_user", "change_password", "authenticate_user"):
            take(scan, rest[k + 2].start)


def _second_positional(scan: Scan, args: list[Word]) -> None:
    """`wpa_passphrase SSID X`."""
    rest = _positionals(scan, args)
    if len(rest) > 1:
        take(scan, rest[1].start)


def _oracle(scan: Scan, args: list[Word]) -> None:
    """`sqlplus user/X@db`, `expdp user/X …`: the part between `/` and `@`."""
    for w in _positionals(scan, args)[:1]:
        t = text(scan, w)
        slash = t.find("/")
        if slash <= 0 or t.startswith(("/", "'/", '"/')):
            continue
        at = t.find("@", slash)
        stop = w.start + (at if at > 0 else len(t))
        if plausible(scan.raw[w.start + slash + 1 : stop]):
            scan.add(w.start + slash + 1, stop, "password", RANK)


def _vault(scan: Scan, args: list[Word]) -> None:
    """`vault login TOKEN`."""
    rest = _positionals(scan, args)
    if len(rest) > 1 and scan.low[rest[0].start : rest[0].end] == "login" and "=" not in text(scan, rest[1]):
        take(scan, rest[1].start)


def _config_set(scan: Scan, args: list[Word]) -> None:
    """`git config KEY X`, `npm config set KEY X`, `aws configure set KEY X` with a secret KEY."""
    rest = _positionals(scan, args)
    if not any(scan.low[w.start : w.end] in ("config", "configure") for w in rest):
        return
    for k, w in enumerate(rest[:-1]):
        info = key_info(re.split(r"[/:]", scan.low[w.start : w.end])[-1])
        if info is not None:
            take(scan, rest[k + 1].start, info.kind)


_DOCKER = Spec(value=("-p", "--password"), needs="login", evidence=("login",))
_MYSQL = Spec(attached=("-p",), custom=_mysqladmin, evidence=("-p", "password"))
_CONFIG = Spec(custom=_config_set, evidence=("config",))
_SPECS: dict[str, Spec] = {
    "sshpass": Spec(value=("-p",), evidence=("-p",)),
    "redis-cli": Spec(value=("-a", "--pass"), custom=_redis_auth, evidence=("-a", "auth", "--pass")),
    "keydb-cli": Spec(value=("-a", "--pass"), custom=_redis_auth, evidence=("-a", "auth", "--pass")),
    **dict.fromkeys(("docker", "podman", "buildah", "nerdctl", "helm", "oras", "az", "crane", "regctl"), _DOCKER),
    "skopeo": Spec(
        value=("-p", "--password"),
        userpass=("--creds", "--src-creds", "--dest-creds"),
        evidence=("-p", "--creds", "-creds"),
    ),
    "curl": Spec(userpass=("-u", "--user", "-U", "--proxy-user"), evidence=("-u", "--user", "--proxy-user")),
    "ipmitool": Spec(value=("-P",), evidence=("-p",)),
    "sqlcmd": Spec(value=("-P",), evidence=("-p",)),
    "bcp": Spec(value=("-P",), evidence=("-p",)),
    **dict.fromkeys(("zip", "unzip", "zipcloak"), Spec(value=("-P", "--password"), evidence=("-p",))),
    **dict.fromkeys(("7z", "7za", "7zr"), Spec(attached=("-p",), evidence=("-p",))),
    **dict.fromkeys(
        ("smbclient", "rpcclient", "smbget", "smbcacls", "smbmap"),
        Spec(userpass=("-U", "--user"), delimiter="%", evidence=("-u", "--user")),
    ),
    "lftp": Spec(userpass=("-u",), delimiter=",", evidence=("-u",)),
    **dict.fromkeys(("useradd", "usermod"), Spec(value=("-p", "--password"), evidence=("-p",))),
    "ssh-keygen": Spec(value=("-N", "-P"), evidence=("-n", "-p")),
    "doctl": Spec(value=("-t", "--access-token"), evidence=("-t", "--access-token")),
    **dict.fromkeys(
        ("mosquitto_pub", "mosquitto_sub", "mosquitto_rr"), Spec(value=("-P", "--pw"), evidence=("-p", "--pw"))
    ),
    "mosquitto_passwd": Spec(custom=_batch, evidence=("-b",)),
    "htpasswd": Spec(custom=_batch),
    "openssl": Spec(custom=_openssl, evidence=("pass:", "-k", "passwd")),
    "nmcli": Spec(custom=_nmcli, evidence=("password", "psk", "wep-key")),
    "rabbitmqctl": Spec(custom=_rabbitmqctl, evidence=("add_user", "change_password", "authenticate_user")),
    "wpa_passphrase": Spec(custom=_second_positional),
    **dict.fromkeys(("sqlplus", "expdp", "impdp", "rman", "sqlldr"), Spec(custom=_oracle, evidence=("/",))),
    "vault": Spec(custom=_vault, evidence=("login",)),
    **dict.fromkeys(("git", "npm", "yarn", "pnpm", "pip", "pip3", "poetry", "aws"), _CONFIG),
    "ldappasswd": Spec(value=("-w", "-s", "-a"), evidence=("-w", "-s", "-a")),
}
_PREFIX_SPECS: tuple[tuple[str, Spec], ...] = (
    ("mysql", _MYSQL),
    ("mariadb", _MYSQL),
    ("ldap", Spec(value=("-w",), evidence=("-w",))),
    ("mongo", Spec(value=("-p", "--password"), evidence=("-p",))),
)

STDIN_READERS: dict[str, tuple[str, ...]] = {
    "chpasswd": (),
    "passwd": (),
    "smbpasswd": (),
    "cryptsetup": (),
    "kinit": (),
    "sudo": ("-S",),
}
"""Commands that read a secret from standard input, and the flags that say they do."""
STDIN_FLAG = "--password-stdin"
PRODUCERS = frozenset({"echo", "printf"})
_STDIN_EVIDENCE = ("echo", "printf", "<<<")

NEEDLES: tuple[str, ...] = tuple(sorted({*_SPECS, *(p for p, _ in _PREFIX_SPECS), *STDIN_READERS, STDIN_FLAG}))
"""The command names (folded) whose lines this rule reads."""


@functools.lru_cache(maxsize=4096)
def spec_of(name: str) -> Spec | None:
    """The spec of the command `name` (a lower-case base name), if any."""
    spec = _SPECS.get(name)
    if spec is not None:
        return spec
    return next((s for prefix, s in _PREFIX_SPECS if name.startswith(prefix)), None)


def evidence_for(needle: str) -> tuple[str, ...]:
    """The substrings (lower-case) of which one must occur for `needle`'s command to matter."""
    if needle in STDIN_READERS or needle == STDIN_FLAG:
        return _STDIN_EVIDENCE
    spec = spec_of(needle)
    return spec.evidence if spec is not None else ()

"""Check primitives: requirements written once and resolved per guest (`[[checks]]`).

A check is either a shell `command` judged by exit status and output pattern (see
`testbed.model.task.Check`), or exactly one primitive, a table named by its kind:

    service = { name = "nginx", active = true, enabled = true }
    port    = { port = 80, protocol = "tcp", address = "any", listening = true, process = "nginx" }
    http    = { url = "http://localhost/", status = 200, header = "^server: nginx", body = "welcome" }
    file    = { path = "/etc/app.ini", exists = true, type = "file", mode = "0640", mode_max = "0640",
                owner = "root", group = "app", contains = "^key=", lacks = "^debug=1" }
    package = { name = "chrony", installed = true }
    user    = { name = "deploy", exists = true, uid = 1001, shell = "/bin/bash", home = "/home/deploy",
                groups = ["sudo"], not_groups = ["adm"] }
    group   = { name = "ops", exists = true, gid = 2000, members = ["alice"], not_members = ["bob"] }
    cron    = { user = "root", command = "backup\\.sh", schedule = "*/5 * * * *", present = true }
    mount   = { path = "/data", mounted = true, fstype = "ext4", source = "^/dev/vdb", options = ["noexec"],
                fstab = true }
    sysctl  = { key = "vm.swappiness", value = "10" }           # or min = / max = (integers)
    reach   = { host = "web", port = 9000, expect = "closed", control_port = 80 }   # from the check's node
    route   = { destination = "10.1.0.0/24", via = "10.0.0.1", dev = "eth1", present = true }
    neighbor = { protocol = "bgp", peer = "10.0.0.2", state = "up" }   # FRR (vtysh ... json)
    unchanged = {}                                              # the node shows no residue

Semantics shared by every primitive:
- The node is the check's `node` (an `http` or `reach` check runs there: "from which node").
- Patterns (`header`, `body`, `contains`, `lacks`, `cron.command`, `mount.source`) are
  POSIX extended regular expressions searched per line (grep -E; `header` ignores case).
- `wait_s`: the primitive is re-evaluated once a second until it holds or `wait_s` has
  passed (default 10 s for live state — services, ports, HTTP, reachability, routes; 0 for
  files, packages, accounts, cron, mounts, sysctl; 60 s for routing neighbours).
- Outcome: holds → `passed`; does not hold → `failed`; cannot be decided → `indeterminate`
  (the tool it needs is missing, the init system is unknown, a `reach` control port does
  not answer, the node's snapshots are incomplete for `unchanged`). Guest scripts say so
  with `EXIT_PASS`, `EXIT_FAIL`, `EXIT_UNDECIDED`; any other exit status is indeterminate.
- `neighbor` and `unchanged` are judged by the harness (`harness_judged`): the first from
  the JSON FRR prints, the second from the run's snapshots (residue analysis).
- A template `{{ name }}` may stand for any value (`port = "{{ port }}"`), see
  `testbed.model.parameters`.

How a primitive becomes shell for a guest: `testbed.model.checkshell`.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from testbed.model.parameters import TEMPLATE_RE, WHOLE_TEMPLATE_RE

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_UNDECIDED = 3
"""Exit statuses of primitive scripts (and the documented `indeterminate_exit` of command checks)."""

NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9@._:+-]{0,127}$")
USER_RE = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9._-]{0,31}\$?|[0-9]{1,10})$")
SYSCTL_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,200}$")
MODE_RE = re.compile(r"^0?[0-7]{3}$|^[0-7]{4}$")
SCHEDULE_FIELD_RE = re.compile(r"^[0-9A-Za-z*/,-]+$")
POSIX_CLASS_RE = re.compile(r"\[:[a-z]+:\]")
CRON_WORDS = {"@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}


def _int_or_template(value: int | str) -> int | str:
    if isinstance(value, str):
        if value.strip().isdigit():
            return int(value)
        if not WHOLE_TEMPLATE_RE.match(value):
            raise ValueError(f"'{value}' is neither an integer nor a template such as '{{{{ port }}}}'")
    return value


IntOrTemplate = Annotated[int | str, AfterValidator(_int_or_template)]
"""An integer field that may be written as a template of an integer parameter."""


def templated(value: object) -> bool:
    """Whether `value` holds a template: its format is checked once rendered (a task is
    instantiated at load time, `testbed.model.taskload.load_task`)."""
    return isinstance(value, str) and TEMPLATE_RE.search(value) is not None


def _regex(value: str | None) -> str | None:
    """A POSIX extended regular expression (checked with Python's `re`, its character
    classes such as [:space:] stood in for)."""
    if value is not None and not templated(value):
        try:
            re.compile(POSIX_CLASS_RE.sub("a", value))
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
    return value


Pattern = Annotated[str, AfterValidator(_regex)]


def _port(value: int | str) -> int | str:
    if isinstance(value, int) and not 1 <= value <= 65535:
        raise ValueError(f"port {value} is outside 1..65535")
    return value


Port = Annotated[IntOrTemplate, AfterValidator(_port)]


def _absolute(value: str) -> str:
    if not value.startswith(("/", "{{")):
        raise ValueError(f"'{value}' is not an absolute path")
    return value


AbsPath = Annotated[str, AfterValidator(_absolute)]


class Primitive(BaseModel):
    """Fields every primitive has."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: ClassVar[str]
    default_wait_s: ClassVar[float] = 0.0
    harness_judged: ClassVar[bool] = False
    wait_s: float | None = Field(default=None, ge=0, le=3600)

    @property
    def wait(self) -> float:
        """Seconds to keep re-evaluating until the primitive holds."""
        return self.default_wait_s if self.wait_s is None else self.wait_s


def _named(value: str) -> str:
    if not NAME_RE.match(value) and not templated(value):
        raise ValueError(f"'{value}' is not a valid name (letters, digits and @ . _ : + -)")
    return value


Name = Annotated[str, AfterValidator(_named)]


def _user(value: str) -> str:
    if not USER_RE.match(value) and not templated(value):
        raise ValueError(f"'{value}' is not a valid user or group name (or numeric id)")
    return value


Account = Annotated[str, AfterValidator(_user)]


class ServiceCheck(Primitive):
    kind = "service"
    default_wait_s = 10.0
    name: Name
    active: bool | None = True
    enabled: bool | None = None

    @model_validator(mode="after")
    def _something(self) -> ServiceCheck:
        if self.active is None and self.enabled is None:
            raise ValueError("give 'active', 'enabled' or both")
        return self


class PortCheck(Primitive):
    kind = "port"
    default_wait_s = 10.0
    port: Port
    protocol: Literal["tcp", "udp"] = "tcp"
    address: str | None = None
    """`any` (0.0.0.0, ::, *), `loopback` (127.0.0.0/8, ::1) or an IP address; None: any socket."""
    listening: bool = True
    process: Name | None = None

    @field_validator("address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is None or value in ("any", "loopback") or templated(value):
            return value
        try:
            ipaddress.ip_address(value)
        except ValueError as exc:
            raise ValueError(f"'{value}' is not 'any', 'loopback' or an IP address") from exc
        return value

    @model_validator(mode="after")
    def _process_needs_listening(self) -> PortCheck:
        if self.process is not None and not self.listening:
            raise ValueError("'process' needs listening = true")
        return self


class HttpCheck(Primitive):
    kind = "http"
    default_wait_s = 10.0
    url: str
    status: IntOrTemplate | list[int] = 200
    header: Pattern | None = None
    body: Pattern | None = None
    method: Literal["GET", "HEAD"] = "GET"
    cacert: AbsPath | None = None
    insecure: bool = False
    timeout_s: float = Field(default=5.0, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not templated(value) and not re.match(r"^https?://[^\s'\"]+$", value):
            raise ValueError(f"'{value}' is not an http:// or https:// URL")
        return value

    @field_validator("status")
    @classmethod
    def _status(cls, value: int | str | list[int]) -> int | str | list[int]:
        codes = value if isinstance(value, list) else [value]
        for code in codes:
            if isinstance(code, int) and not 100 <= code <= 599:
                raise ValueError(f"{code} is not an HTTP status")
        if isinstance(value, list) and not value:
            raise ValueError("give at least one status")
        return value


class FileCheck(Primitive):
    kind = "file"
    path: AbsPath
    exists: bool = True
    type: Literal["file", "directory", "symlink"] | None = None
    mode: str | None = None
    mode_max: str | None = None
    """No permission bit outside this mode may be set (`0640`: not group-writable, nothing for others)."""
    owner: Account | None = None
    group: Account | None = None
    contains: Pattern | None = None
    lacks: Pattern | None = None

    @field_validator("mode", "mode_max")
    @classmethod
    def _mode(cls, value: str | None) -> str | None:
        if value is not None and not MODE_RE.match(value):
            raise ValueError(f"'{value}' is not an octal mode such as 0640")
        return value

    @model_validator(mode="after")
    def _absent_has_no_attributes(self) -> FileCheck:
        if not self.exists:
            given = [k for k in ("type", "mode", "mode_max", "owner", "group", "contains", "lacks") if getattr(self, k)]
            if given:
                raise ValueError(f"exists = false cannot be combined with {', '.join(given)}")
        return self


class PackageCheck(Primitive):
    kind = "package"
    name: Name
    installed: bool = True


class UserCheck(Primitive):
    kind = "user"
    name: Account
    exists: bool = True
    uid: IntOrTemplate | None = None
    shell: str | None = None
    home: str | None = None
    groups: list[Account] = []
    not_groups: list[Account] = []

    @model_validator(mode="after")
    def _absent_has_no_attributes(self) -> UserCheck:
        if not self.exists and (self.uid is not None or self.shell or self.home or self.groups or self.not_groups):
            raise ValueError("exists = false cannot be combined with other attributes")
        return self


class GroupCheck(Primitive):
    kind = "group"
    name: Account
    exists: bool = True
    gid: IntOrTemplate | None = None
    members: list[Account] = []
    not_members: list[Account] = []

    @model_validator(mode="after")
    def _absent_has_no_attributes(self) -> GroupCheck:
        if not self.exists and (self.gid is not None or self.members or self.not_members):
            raise ValueError("exists = false cannot be combined with other attributes")
        return self


class CronCheck(Primitive):
    kind = "cron"
    user: Account = "root"
    command: Pattern
    schedule: str | None = None
    present: bool = True

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        if value is None:
            return None
        fields = value.split()
        if len(fields) == 1 and fields[0] in CRON_WORDS:
            return value
        if len(fields) != 5 or not all(SCHEDULE_FIELD_RE.match(f) for f in fields):
            raise ValueError(f"'{value}' is not a cron schedule (five fields or @daily, @hourly, ...)")
        return " ".join(fields)


class MountCheck(Primitive):
    kind = "mount"
    path: AbsPath
    mounted: bool = True
    fstype: Name | None = None
    source: Pattern | None = None
    options: list[Name] = []
    fstab: bool | None = None
    """Whether /etc/fstab must (true) or must not (false) have an entry for `path`."""

    @model_validator(mode="after")
    def _unmounted_has_no_attributes(self) -> MountCheck:
        if not self.mounted and (self.fstype or self.source or self.options):
            raise ValueError("mounted = false cannot be combined with fstype, source or options")
        return self


class SysctlCheck(Primitive):
    kind = "sysctl"
    key: str
    value: str | None = None
    min: IntOrTemplate | None = None
    max: IntOrTemplate | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not SYSCTL_RE.match(value) and not templated(value):
            raise ValueError(f"'{value}' is not a sysctl key")
        return value

    @model_validator(mode="after")
    def _something(self) -> SysctlCheck:
        if self.value is None and self.min is None and self.max is None:
            raise ValueError("give 'value', or 'min' and/or 'max'")
        if self.value is not None and (self.min is not None or self.max is not None):
            raise ValueError("give either 'value' or 'min'/'max', not both")
        return self


class ReachCheck(Primitive):
    kind = "reach"
    default_wait_s = 10.0
    host: str
    port: Port
    expect: Literal["open", "closed"] = "open"
    control_port: Port | None = None
    """Only for expect = "closed": a port of `host` that must answer, else the check cannot decide."""
    timeout_s: float = Field(default=3.0, gt=0, le=60)

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not templated(value) and not re.match(r"^[A-Za-z0-9_.:-]+$", value):
            raise ValueError(f"'{value}' is not a host name or address")
        return value

    @model_validator(mode="after")
    def _control(self) -> ReachCheck:
        if self.control_port is not None and self.expect != "closed":
            raise ValueError("'control_port' only makes sense with expect = \"closed\"")
        return self


class RouteCheck(Primitive):
    kind = "route"
    default_wait_s = 10.0
    destination: str
    via: str | None = None
    dev: Name | None = None
    present: bool = True
    table: Name | None = None

    @field_validator("destination")
    @classmethod
    def _destination(cls, value: str) -> str:
        if value == "default" or templated(value):
            return value
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError as exc:
            raise ValueError(f"'{value}' is not 'default' or a network such as 10.1.0.0/24") from exc
        return value

    @field_validator("via")
    @classmethod
    def _via(cls, value: str | None) -> str | None:
        if value is not None and not templated(value):
            try:
                ipaddress.ip_address(value)
            except ValueError as exc:
                raise ValueError(f"'{value}' is not an IP address") from exc
        return value


class NeighborCheck(Primitive):
    kind = "neighbor"
    default_wait_s = 60.0
    harness_judged = True
    protocol: Literal["bgp", "ospf", "ospf6", "bfd"]
    peer: str
    """The peer's address (BGP, BFD), router id or interface address (OSPF), or interface name."""
    state: Literal["up", "down"] = "up"
    vrf: Name | None = None

    @field_validator("peer")
    @classmethod
    def _peer(cls, value: str) -> str:
        if not templated(value) and not re.match(r"^[A-Za-z0-9_.:-]+$", value):
            raise ValueError(f"'{value}' is not an address, router id or interface name")
        return value


class UnchangedCheck(Primitive):
    """The node shows no residue after the agent: nothing changed beyond the task's
    `[expected]` (judged from the run's snapshots, `testbed.analysis.residue`)."""

    kind = "unchanged"
    harness_judged = True


PRIMITIVES: dict[str, type[Primitive]] = {
    cls.kind: cls
    for cls in (
        ServiceCheck, PortCheck, HttpCheck, FileCheck, PackageCheck, UserCheck, GroupCheck, CronCheck,
        MountCheck, SysctlCheck, ReachCheck, RouteCheck, NeighborCheck, UnchangedCheck,
    )
}  # fmt: skip


class PrimitiveFields(BaseModel):
    """The primitive tables a `[[checks]]` entry may hold (at most one; see the module
    docstring). Mixed into `testbed.model.task.Check`."""

    service: ServiceCheck | None = None
    port: PortCheck | None = None
    http: HttpCheck | None = None
    file: FileCheck | None = None
    package: PackageCheck | None = None
    user: UserCheck | None = None
    group: GroupCheck | None = None
    cron: CronCheck | None = None
    mount: MountCheck | None = None
    sysctl: SysctlCheck | None = None
    reach: ReachCheck | None = None
    route: RouteCheck | None = None
    neighbor: NeighborCheck | None = None
    unchanged: UnchangedCheck | None = None

    def given_primitives(self) -> list[Primitive]:
        """The primitives given (a valid check has at most one)."""
        return [p for p in (getattr(self, kind) for kind in PRIMITIVES) if p is not None]

    @property
    def primitive(self) -> Primitive | None:
        """The check's primitive, or None for a command check."""
        given = self.given_primitives()
        return given[0] if given else None


def describe(primitive: Primitive) -> dict[str, Any]:
    """A primitive as stored with a check's result: its kind and its arguments."""
    return {"kind": primitive.kind, **primitive.model_dump(exclude_none=True)}

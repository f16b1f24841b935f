"""What a catalog entry says about a network device: the agent's own login, how the device
is operated (save, reboot, its configuration file) and, for images that have no SSH until
configured, how testbed drives its serial console.

`AgentLogin`: where the agent's login differs from the harness's (a network CLI such as
vtysh for an `admin` user while the harness keeps root's shell), the user and the dialect
of that login (a key of `testbed.guest.dialects.DIALECTS`).

`DeviceOps` (the image's `device:`): harness commands, run on the harness's channel, that
save the running configuration (`save`), reboot the device the vendor's way (`reboot`;
None: the service manager's reboot), and the path of the saved configuration
(`config_file`, owned by `config_owner`; the seed writes the topology's starting
configuration there).

`ConsoleSpec` (the image's `console:`): how testbed logs in on the serial console
(`login_prompt`, `password_prompt`, `user`, `password`), recognises the device's prompt
(`prompt`, a regex matched at the end of the console output), reaches a POSIX shell
(`enter`: steps after the login, e.g. OPNsense's menu, which `landing` recognises when a
login lands there instead of at the prompt), pushes a bootstrap in the device's
own syntax (`bootstrap`: management address, SSH enabled, testbed's key installed; `save`
steps make it survive a reboot), reads the SSH host key to pin (`host_key`: a command whose
output holds an `ssh-ed25519 ...` line), and whether SSH can be enabled at all (`ssh`
False: commands and probes run over the console channel, `testbed.guest.console`).

Step texts are templates: `{name}` fields from `TEMPLATE_FIELDS` (an unknown one is an
`InputError` when the image loads, naming the step).
"""

from __future__ import annotations

import re
import string

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TEMPLATE_FIELDS: dict[str, str] = {
    "hostname": "the node's name",
    "mgmt_ip": "the node's management address",
    "mgmt_prefix": "the management subnet's prefix length",
    "mgmt_cidr": "mgmt_ip/mgmt_prefix",
    "mgmt_netmask": "the management subnet's netmask",
    "mgmt_mac": "the management NIC's MAC address",
    "host_ip": "the lab host's address on the management network",
    "authorized_key": "testbed's public key line (type, key, comment)",
    "key_type": "the key's type (ssh-ed25519)",
    "key_body": "the key's base64 body",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def template_fields(text: str) -> list[str]:
    """The `{field}` names a step template uses (`{{` and `}}` are literal braces)."""
    return [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]


class AgentLogin(_Strict):
    user: str
    dialect: str


class DeviceOps(_Strict):
    save: str | None = None
    reboot: str | None = None
    config_file: str | None = None
    config_owner: str | None = None  # user:group the configuration file belongs to
    running_config: str | None = None
    apply_saved: str | None = None
    """Applies the saved configuration again (FRR: `vtysh -b`): used when a boot left saved
    lines out of the running configuration (`testbed.hypervisor.deviceconfig`)."""


class ConsoleStep(_Strict):
    """Send `send` (a template) followed by a carriage return, then wait up to `timeout_s`
    for `expect` (a regex; default: the console's `prompt`). `secret`: the text is not
    kept in logs or errors (passwords)."""

    send: str
    expect: str | None = None
    timeout_s: float = Field(default=60, gt=0)
    secret: bool = False

    @field_validator("send")
    @classmethod
    def _fields(cls, value: str) -> str:
        unknown = [f for f in template_fields(value) if f not in TEMPLATE_FIELDS]
        if unknown:
            known = ", ".join(TEMPLATE_FIELDS)
            raise ValueError(f"unknown template field(s) {', '.join(unknown)} (known: {known})")
        return value

    @field_validator("expect")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            _compile(value)
        return value


class ConsoleSpec(_Strict):
    prompt: str
    login_prompt: str | None = r"login:\s*$"
    password_prompt: str = r"[Pp]assword:\s*$"
    user: str | None = None
    password: str | None = None
    wake: str = "\r"
    landing: str | None = None
    enter: list[ConsoleStep] = []
    bootstrap: list[ConsoleStep] = []
    host_key: str | None = None
    ssh: bool = True
    work_dir: str = "/run/testbed"
    login_timeout_s: float = Field(default=120, gt=0)

    @field_validator("prompt", "login_prompt", "password_prompt", "landing")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            _compile(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ConsoleSpec:
        if self.login_prompt is not None and self.user is None:
            raise ValueError("a console with a login prompt needs `user` (and usually `password`)")
        if self.ssh and self.host_key is None:
            raise ValueError("a console bootstrap that enables SSH needs `host_key` (the command that prints it)")
        return self


def _compile(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"'{pattern}' is not a valid regular expression: {exc}") from exc

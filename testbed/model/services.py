"""How the harness drives a guest's service manager (an image's `init`).

Contract: `service_manager(init)` returns the shell commands (with `{service}` placeholders,
already safe to format with a shell-quoted name) that enable, disable, start, stop, restart
and query a service and reboot the guest, for `systemd` and `openrc` guests. Debian's OpenRC
runs under sysvinit (PID 1 is `init`, not `openrc-init`), so its reboot is `reboot`, which
sysvinit turns into `shutdown -r now`; Alpine's busybox `reboot` works the same way. `other`
(network OSes with their own managers) gets `reboot` and no service commands.

`boot_settled` waits until the boot's queue of start jobs is empty, so a snapshot taken after
a reboot shows the system as booted, not a service half-way through its start: systemd's
`systemctl is-system-running --wait` (its exit status says `degraded` as well as `running`;
either is settled), and under OpenRC the wait for the `openrc` runlevel process to end. It is
bounded (`settle_after_boot`); a boot that does not settle in time is snapshotted as it is.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from testbed.model.images import InitSystem


@dataclass(frozen=True)
class ServiceManager:
    init: InitSystem
    enable: str | None
    disable: str | None
    start: str | None
    stop: str | None
    restart: str | None
    is_active: str | None  # exit status 0 when the service runs
    list_enabled: str | None  # what the snapshot's services probe reads, for people
    reboot: str
    boot_settled: str | None  # returns once no start job of the boot is queued


SYSTEMD = ServiceManager(
    init="systemd",
    enable="systemctl enable {service}",
    disable="systemctl disable {service}",
    start="systemctl start {service}",
    stop="systemctl stop {service}",
    restart="systemctl restart {service}",
    is_active="systemctl is-active --quiet {service}",
    list_enabled="systemctl list-unit-files --state=enabled",
    reboot="systemctl reboot",
    boot_settled="systemctl is-system-running --wait",
)

OPENRC = ServiceManager(
    init="openrc",
    enable="rc-update add {service} default",
    disable="rc-update del {service} default",
    start="rc-service {service} start",
    stop="rc-service {service} stop",
    restart="rc-service {service} restart",
    is_active="rc-service {service} status",
    list_enabled="rc-update show -v",
    reboot="reboot",
    boot_settled="while pgrep -x openrc >/dev/null; do sleep 1; done",
)

OTHER = ServiceManager(
    init="other",
    enable=None,
    disable=None,
    start=None,
    stop=None,
    restart=None,
    is_active=None,
    list_enabled=None,
    reboot="reboot",
    boot_settled=None,
)

SERVICE_MANAGERS: dict[str, ServiceManager] = {m.init: m for m in (SYSTEMD, OPENRC, OTHER)}


def service_manager(init: str) -> ServiceManager:
    """The commands for `init` (an `ImageDef.init` value)."""
    return SERVICE_MANAGERS[init]


def detached_reboot(init: str) -> str:
    """A reboot command that returns at once (the guest reboots a second later), so the
    SSH command that asks for it finishes before the connection drops."""
    return f"nohup sh -c 'sleep 1; {service_manager(init).reboot}' >/dev/null 2>&1 &"


def settle_after_boot(init: str, timeout_s: int) -> str | None:
    """The command that returns once the boot of an `init` guest has settled, or after
    `timeout_s` seconds (exit status 124 then); None where the init has no such wait."""
    settled = service_manager(init).boot_settled
    if settled is None:
        return None
    return f"timeout {timeout_s} sh -c {shlex.quote(settled)}"

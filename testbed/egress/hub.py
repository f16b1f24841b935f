"""One lab host's egress: a shared Squid, its relay, and one listener per lab.

    async with EgressHub(EgressSettings.from_env()) as hub:
        async with hub.lab(LabEgressSpec(...)) as egress:   # after the lab's networks exist
            ... configure the guests with egress.proxy_url, run ...
        rows = egress.records()                             # after the lab left the proxy

Contracts:
- The hub starts nothing until its first lab; then, in the proxy's network namespace
  (`EgressSettings.netns`: `TESTBED_EGRESS_NETNS`, set by scripts/netns-run to the host's
  namespace; unset on a lab host without namespaces: this process's own), it starts Squid on
  a free loopback port and the upstream relay on a Unix socket in its state directory
  (`testbed.egress.relay`). Both are children of this process, stopped by pid when the hub
  closes; the state directory (a fresh temporary directory) is removed then.
- `hub.lab(spec)` adds the lab's rule to Squid (reload), then listens on the lab's
  management bridge address, `listen_port`, for the lab's subnet only. Leaving it stops
  the listener and removes the rule; `LabEgress.records()` then reads the lab's own
  access log, attributed to nodes by management address. Labs come and go concurrently.
- A lab whose policy is `none`, or a lab already attached, is a `ValueError`.
- Leave `hub.lab` before the lab's networks go: its listener holds the bridge address,
  which a later lab may get again.
- Only a local lab host is served: the listener must run where the lab's bridges are.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import testbed
from testbed.db.records import EgressRecord
from testbed.egress.accesslog import read_records
from testbed.egress.hosts import MIRROR_HOSTS, allowed_domains
from testbed.egress.proxy import SquidProxy, free_port, in_netns, stop_process
from testbed.egress.relay import LabListener
from testbed.egress.squidconf import LabRule, SquidLayout
from testbed.errors import HarnessError
from testbed.hypervisor.hostguard import EGRESS_PORT
from testbed.model.egress import EgressSpec

PROXY_PORT = EGRESS_PORT
"""The port guests reach the proxy on, at their management network's host address (the
host guard admits it there)."""

NETNS_ENV = "TESTBED_EGRESS_NETNS"


@dataclass(frozen=True)
class EgressSettings:
    """How a lab host runs its egress proxy."""

    netns: str | None = None
    """Network namespace file Squid and the upstream relay run in (None: this process's)."""
    squid: str = "squid"
    listen_port: int = PROXY_PORT
    nameservers: tuple[str, ...] = ()
    block_private: bool = True
    runtime_dir: Path | None = None
    """Parent of the hub's state directory (None: the system's temporary directory; the
    proxy user must be able to reach it)."""
    cache_mem_mb: int = 256
    mirrors: tuple[str, ...] = MIRROR_HOSTS

    @classmethod
    def from_env(cls, mirrors: tuple[str, ...] = MIRROR_HOSTS) -> EgressSettings:
        return cls(netns=os.environ.get(NETNS_ENV) or None, mirrors=mirrors)


@dataclass(frozen=True)
class LabEgressSpec:
    """What the hub needs to know of one lab."""

    key: str
    """The lab id."""
    subnet: ipaddress.IPv4Network
    """The lab's management subnet."""
    host_ip: str
    """The host's address on the lab's management bridge (where guests find the proxy)."""
    policy: EgressSpec
    nodes_by_ip: Mapping[str, str] = field(default_factory=dict)
    """Management address -> node name, to attribute requests."""


@dataclass(frozen=True)
class LabEgress:
    """A lab attached to the hub."""

    spec: LabEgressSpec
    port: int
    log_path: Path

    @property
    def proxy_url(self) -> str:
        return f"http://{self.spec.host_ip}:{self.port}/"

    def records(self) -> list[EgressRecord]:
        """The lab's requests so far: complete once the lab has left the hub, and readable
        until the hub closes (its state directory goes then)."""
        return read_records(self.log_path, self.spec.nodes_by_ip)


def _proxy_user() -> str | None:
    """Squid's unprivileged user when running as root (Squid will not stay root)."""
    if os.geteuid() != 0:
        return None
    for name in ("proxy", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    return None


class EgressHub:
    """See the module docstring."""

    def __init__(self, settings: EgressSettings | None = None) -> None:
        self.settings = settings or EgressSettings()
        self._lock = asyncio.Lock()
        self._root: Path | None = None
        self._squid: SquidProxy | None = None
        self._relay: asyncio.subprocess.Process | None = None
        self._rules: dict[str, LabRule] = {}
        self._serial = 0

    @property
    def socket_path(self) -> Path:
        assert self._root is not None
        return self._root / "relay.sock"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the relay and Squid (by pid) and remove the state directory."""
        if self._relay is not None:
            await stop_process(self._relay, 5.0)
            self._relay = None
        if self._squid is not None:
            await self._squid.stop()
            self._squid = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    @contextlib.asynccontextmanager
    async def lab(self, spec: LabEgressSpec) -> AsyncIterator[LabEgress]:
        """Attach a lab for the duration of the block; see the module docstring."""
        if not spec.policy.enabled:
            raise ValueError(f"lab {spec.key} has egress 'none': it gets no proxy")
        squid = await self._started()
        async with self._lock:
            if spec.key in self._rules:
                raise ValueError(f"lab {spec.key} is already attached to the egress hub")
            self._serial += 1
            log_path = squid.layout.state_dir / f"lab-{spec.key}-{self._serial}.log"
            domains = allowed_domains(spec.policy, self.settings.mirrors)
            self._rules[spec.key] = LabRule(spec.key, spec.subnet, domains, log_path)
            try:
                await squid.set_labs(list(self._rules.values()))
            except BaseException:
                self._rules.pop(spec.key, None)
                raise
        try:
            listener = LabListener(spec.host_ip, self.settings.listen_port, self.socket_path, spec.subnet)
            try:
                await listener.start()
            except OSError as exc:
                raise HarnessError(
                    f"cannot listen for lab {spec.key}'s proxy on {spec.host_ip}:{self.settings.listen_port}: {exc}"
                ) from exc
            try:
                yield LabEgress(spec, listener.port, log_path)
            finally:
                await listener.close()
        finally:
            async with self._lock:
                self._rules.pop(spec.key, None)
                if self._squid is not None:
                    await self._squid.set_labs(list(self._rules.values()))

    async def _started(self) -> SquidProxy:
        async with self._lock:
            if self._squid is None:
                try:
                    await self._start()
                except BaseException:
                    await self.close()
                    raise
            assert self._squid is not None
            return self._squid

    def _make_state_dirs(self) -> tuple[Path, Path, str | None]:
        root = Path(tempfile.mkdtemp(prefix="testbed-egress-", dir=self.settings.runtime_dir))
        root.chmod(0o755)
        state = root / "squid"
        state.mkdir(mode=0o755)
        user = _proxy_user()
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(state, entry.pw_uid, entry.pw_gid)
        return root, state, user

    async def _start(self) -> None:
        s = self.settings
        if shutil.which(s.squid) is None:
            raise HarnessError(f"egress needs Squid ({s.squid} not found); install it (`apt-get install squid`)")
        self._root, state, user = self._make_state_dirs()
        port = await free_port(s.netns)
        layout = SquidLayout(
            port=port,
            state_dir=state,
            user=user,
            nameservers=s.nameservers,
            block_private=s.block_private,
            cache_mem_mb=s.cache_mem_mb,
        )
        self._squid = SquidProxy(layout, squid=s.squid, netns=s.netns)
        await self._squid.start()
        self._relay = await self._start_relay(port)

    async def _start_relay(self, port: int) -> asyncio.subprocess.Process:
        package_parent = str(Path(testbed.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
        argv = [sys.executable, "-m", "testbed.egress.relay", "upstream"]
        argv += ["--unix", str(self.socket_path), "--connect", f"127.0.0.1:{port}"]
        errors = self.socket_path.with_name("relay.err")
        with errors.open("wb") as err_file:
            proc = await asyncio.create_subprocess_exec(
                *in_netns(argv, self.settings.netns),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=err_file,
                env=env,
            )
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), 20.0)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            await stop_process(proc, 2.0)
            err = errors.read_text(encoding="utf-8", errors="replace").strip()
            raise HarnessError(f"the egress relay did not start: {err[-800:] or 'no output'}")
        return proc

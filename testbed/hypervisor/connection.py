"""One libvirt connection per host URI, with async wrappers around its blocking calls.

libvirt-python calls block, so every call runs in a thread of the connection's own pool
(`LIBVIRT_THREADS` of them; libvirt connections are thread-safe), not in asyncio's default
executor: that one has `cpu_count + 4` threads (6 on a 2-core host), which a group of
episodes restored at once (each `virDomainRestoreFlags` holds a thread for about a second)
would fill, queueing every other blocking call of the process behind them. libvirtd in
turn serves at most `max_client_requests` calls of one connection at once (5 by default);
scripts/netns-run's private libvirtd allows `LIBVIRT_THREADS`, and a lab host that restores
large groups should set the same. Domains started with `autodestroy=True` are killed by libvirt
when this connection closes (for example when the process dies), as cockpit's test machines
do; labs meant to outlive the process (`testbed lab up`) start without it.

A lost connection (libvirtd restarted, the SSH link of a `qemu+ssh://` URI dropped) is not
"the object is gone": the call that meets it reopens the connection (retrying for up to
`RECONNECT_S`) and, for lookups, asks again; only libvirt's own "no such domain/network"
answer means gone. Guests keep running across a libvirtd restart, so a run goes on (the
domains lose their autodestroy binding to the old connection; teardown and the reaper
still remove them). When the daemon does not come back, the call raises `HarnessError`.

Keepalive: with an event loop registered (`testbed.hypervisor.events`) libvirt's client
declares a connection dead after 5 unanswered keepalives 5 s apart, and libvirtd then
autodestroys every domain the connection started. On a loaded 2-core host a busy process
can miss 25 s of keepalives while its guests are fine, so connections are opened with
`KEEPALIVE` (15 s x 20: five minutes of silence) instead. libvirtd keeps its own count of
the client's silence (`keepalive_interval`/`keepalive_count` in libvirtd.conf, 5 s x 5 by
default: about 30 s) and closes the connection, with the same autodestroy; scripts/netns-run
starts its private libvirtd with 15 x 20, and a loaded lab host should set the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import libvirt

from testbed.errors import HarnessError
from testbed.hypervisor.events import DomainEvents, StopEvent, ensure_event_loop
from testbed.hypervisor.restorefirst import RestoreTraffic
from testbed.hypervisor.xml import LabMetadata

T = TypeVar("T")

log = logging.getLogger(__name__)

RECONNECT_S = 30.0
_GONE = frozenset({libvirt.VIR_ERR_NO_DOMAIN, libvirt.VIR_ERR_NO_NETWORK})


LIBVIRT_THREADS = 32
"""Threads for blocking libvirt calls per connection (see the module docstring)."""

KEEPALIVE = (15, 20)
"""libvirt client keepalive: interval (s) and unanswered count (see the module docstring)."""


def means_gone(exc: libvirt.libvirtError) -> bool:
    """True when libvirt itself says the object does not exist."""
    return exc.get_error_code() in _GONE


_silenced = False


def _silence_libvirt_stderr() -> None:
    """libvirt prints every error to stderr by default; we raise them instead."""
    global _silenced
    if not _silenced:
        libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
        _silenced = True


@dataclass(frozen=True)
class OwnedObject:
    """A libvirt domain or network carrying testbed metadata."""

    kind: str  # "domain" | "network"
    name: str
    metadata: LabMetadata
    active: bool


class Hypervisor:
    """A libvirt connection; `open()` before use, `close()` after."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._conn: libvirt.virConnect | None = None
        self._reconnect_lock = threading.Lock()
        self.reconnects = 0
        self.events = DomainEvents()
        self.restores = RestoreTraffic()  # restores in flight; reconnects wait (`restorefirst`)
        self._pool: ThreadPoolExecutor | None = None

    @property
    def conn(self) -> libvirt.virConnect:
        if self._conn is None:
            raise HarnessError(f"libvirt connection to {self.uri} is not open")
        return self._conn

    async def open(self) -> Hypervisor:
        _silence_libvirt_stderr()
        ensure_event_loop()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=LIBVIRT_THREADS, thread_name_prefix="libvirt")
        try:
            self._conn = await self._thread(self._open_watched)
        except libvirt.libvirtError as exc:
            raise HarnessError(
                f"cannot connect to libvirt at {self.uri}: {exc}. Is libvirtd running? "
                "(scripts/netns-run starts a private one; on a lab host start libvirtd)"
            ) from exc
        return self

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(libvirt.libvirtError):
                await self._thread(conn.close)
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    async def _thread(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in the connection's thread pool (asyncio's default executor before
        `open()` made one or after `close()` released it)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args))

    async def __aenter__(self) -> Hypervisor:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking libvirt call in a thread; libvirt errors become HarnessError. A
        call that found the connection dead reopens it (for the next call) before raising."""
        try:
            return await self._thread(fn, *args)
        except libvirt.libvirtError as exc:
            await self._thread(self._revive_if_dead)
            raise HarnessError(f"libvirt: {exc}") from exc

    def _open_watched(self) -> libvirt.virConnect:
        conn = libvirt.open(self.uri)
        self.events.watch(conn)
        with contextlib.suppress(libvirt.libvirtError):  # drivers without keepalive (test://)
            conn.setKeepAlive(*KEEPALIVE)
        return conn

    def _alive(self) -> bool:
        conn = self._conn
        if conn is None or self.events.closed:
            return False
        try:
            return bool(conn.isAlive())
        except libvirt.libvirtError:
            return False

    def _revive_if_dead(self) -> bool:
        """Reopen the connection if it died (blocking; retries for `RECONNECT_S`). True
        when it was reopened. Raises `HarnessError` when libvirtd does not come back."""
        with self._reconnect_lock:
            if self._conn is None or self._alive():
                return False
            deadline = time.monotonic() + RECONNECT_S
            while True:
                try:
                    self._conn = self._open_watched()
                except libvirt.libvirtError as exc:
                    if time.monotonic() > deadline:
                        raise HarnessError(
                            f"lost the libvirt connection to {self.uri} and could not reopen it "
                            f"within {RECONNECT_S:.0f} s: {exc}. Is libvirtd running?"
                        ) from exc
                    time.sleep(1)
                    continue
                self.reconnects += 1
                log.warning("libvirt connection to %s was lost; reopened", self.uri)
                return True

    def _lookup(self, lookup: Callable[[libvirt.virConnect], T], what: str) -> T | None:
        """`lookup(conn)`, or None when libvirt says the object does not exist; a lost
        connection is reopened and the lookup asked again; any other failure raises."""
        for attempt in (1, 2):
            try:
                return lookup(self.conn)
            except libvirt.libvirtError as exc:
                if means_gone(exc):
                    return None
                if attempt == 1 and self._revive_if_dead():
                    continue
                raise HarnessError(f"cannot look up {what}: {exc}") from exc
        raise AssertionError("unreachable")

    async def version(self) -> tuple[str, str]:
        lib = await self.call(self.conn.getLibVersion)
        hv = await self.call(self.conn.getVersion)
        return _fmt_version(lib), _fmt_version(hv)

    async def create_network(self, xml: str) -> libvirt.virNetwork:
        return await self.call(self.conn.networkCreateXML, xml)

    async def create_domain(self, xml: str, *, autodestroy: bool) -> libvirt.virDomain:
        flags = libvirt.VIR_DOMAIN_START_AUTODESTROY if autodestroy else 0
        return await self.call(self.conn.createXML, xml, flags)

    async def destroy_domain(self, name: str) -> bool:
        """Destroy (and undefine, if persistent) a domain; False if it did not exist."""
        return await self._thread(self._destroy_domain_sync, name)

    def _destroy_domain_sync(self, name: str) -> bool:
        dom = self._lookup(lambda c: c.lookupByName(name), f"domain {name}")
        if dom is None:
            return False
        try:
            if dom.isActive():
                dom.destroy()
        except libvirt.libvirtError as exc:
            if self._lookup(lambda c: c.lookupByName(name), f"domain {name}") is not None:
                raise HarnessError(f"cannot destroy domain {name}: {exc}") from exc
            return True
        try:
            if dom.isPersistent():
                dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_NVRAM)
        except libvirt.libvirtError:
            pass
        return True

    async def destroy_network(self, name: str) -> bool:
        return await self._thread(self._destroy_network_sync, name)

    def _destroy_network_sync(self, name: str) -> bool:
        net = self._lookup(lambda c: c.networkLookupByName(name), f"network {name}")
        if net is None:
            return False
        try:
            if net.isActive():
                net.destroy()
            if net.isPersistent():
                net.undefine()
        except libvirt.libvirtError as exc:
            if self._lookup(lambda c: c.networkLookupByName(name), f"network {name}") is not None:
                raise HarnessError(f"cannot destroy network {name}: {exc}") from exc
        return True

    async def owned_objects(self) -> list[OwnedObject]:
        """Every domain and network whose XML carries testbed metadata."""
        await self._thread(self._revive_if_dead)
        return await self.call(self._owned_objects_sync)

    def _owned_objects_sync(self) -> list[OwnedObject]:
        found: list[OwnedObject] = []
        for dom in self.conn.listAllDomains(0):
            try:
                xml = dom.XMLDesc(0)
                active = bool(dom.isActive())
            except libvirt.libvirtError:
                continue  # vanished meanwhile
            meta = LabMetadata.from_xml(xml)
            if meta is not None:
                found.append(OwnedObject("domain", dom.name(), meta, active))
        for net in self.conn.listAllNetworks(0):
            try:
                xml = net.XMLDesc(0)
                active = bool(net.isActive())
            except libvirt.libvirtError:
                continue
            meta = LabMetadata.from_xml(xml)
            if meta is not None:
                found.append(OwnedObject("network", net.name(), meta, active))
        return found

    async def network_subnets(self) -> list[str]:
        """CIDRs of every active libvirt network's host address (to avoid clashes)."""
        return await self._thread(self._network_subnets_sync)

    def _network_subnets_sync(self) -> list[str]:
        import ipaddress
        import xml.etree.ElementTree as ET

        subnets: list[str] = []
        for net in self.conn.listAllNetworks(libvirt.VIR_CONNECT_LIST_NETWORKS_ACTIVE):
            try:
                root = ET.fromstring(net.XMLDesc(0))
            except (libvirt.libvirtError, ET.ParseError):
                continue
            for ip in root.findall("ip"):
                addr = ip.get("address")
                prefix = ip.get("prefix") or ip.get("netmask")
                if addr and prefix and ":" not in addr:
                    subnets.append(str(ipaddress.IPv4Interface(f"{addr}/{prefix}").network))
        return subnets

    async def domain_status(self, name: str) -> DomainStatus:
        """The domain's state, libvirt's reason for it, and the last stop event seen."""

        def _status() -> DomainStatus:
            stop = self.events.last_stop(name)
            dom = self._lookup(lambda c: c.lookupByName(name), f"domain {name}")
            if dom is None:
                return DomainStatus("missing", None, stop)
            try:
                state, reason = dom.state()
            except libvirt.libvirtError as exc:
                if means_gone(exc):
                    return DomainStatus("missing", None, stop)
                raise HarnessError(f"cannot read the state of domain {name}: {exc}") from exc
            return DomainStatus(_STATE_NAMES.get(state, "other"), _reason_name(state, reason), stop)

        return await self._thread(_status)

    async def domain_state(self, name: str) -> str:
        """`running`, `paused`, `shutoff`, `crashed`, `other` or `missing`."""

        def _state() -> str:
            dom = self._lookup(lambda c: c.lookupByName(name), f"domain {name}")
            if dom is None:
                return "missing"
            try:
                state, _ = dom.state()
            except libvirt.libvirtError as exc:
                if means_gone(exc):
                    return "missing"
                raise HarnessError(f"cannot read the state of domain {name}: {exc}") from exc
            return {
                libvirt.VIR_DOMAIN_RUNNING: "running",
                libvirt.VIR_DOMAIN_PAUSED: "paused",
                libvirt.VIR_DOMAIN_SHUTOFF: "shutoff",
                libvirt.VIR_DOMAIN_CRASHED: "crashed",
            }.get(state, "other")

        return await self._thread(_state)


_STATE_NAMES = {
    libvirt.VIR_DOMAIN_RUNNING: "running",
    libvirt.VIR_DOMAIN_PAUSED: "paused",
    libvirt.VIR_DOMAIN_SHUTOFF: "shutoff",
    libvirt.VIR_DOMAIN_CRASHED: "crashed",
    libvirt.VIR_DOMAIN_PMSUSPENDED: "suspended",
}


def _reason_name(state: int, reason: int) -> str | None:
    if state == libvirt.VIR_DOMAIN_CRASHED:
        return "panicked" if reason == libvirt.VIR_DOMAIN_CRASHED_PANICKED else "unknown"
    if state == libvirt.VIR_DOMAIN_SHUTOFF:
        return {
            libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN: "shutdown",
            libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED: "destroyed",
            libvirt.VIR_DOMAIN_SHUTOFF_CRASHED: "crashed",
            libvirt.VIR_DOMAIN_SHUTOFF_FAILED: "failed",
            libvirt.VIR_DOMAIN_SHUTOFF_SAVED: "saved",
        }.get(reason, "unknown")
    return None


@dataclass(frozen=True)
class DomainStatus:
    """`state` ∈ running, paused, shutoff, crashed, suspended, other, missing; `reason` is
    libvirt's for shutoff/crashed states; `stop` the last stop event seen on this
    connection (the only record of how a transient domain ended once it is gone)."""

    state: str
    reason: str | None
    stop: StopEvent | None


def _fmt_version(value: int) -> str:
    return f"{value // 1_000_000}.{value // 1000 % 1000}.{value % 1000}"

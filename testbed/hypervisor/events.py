"""libvirt's event loop and what it tells us: how each domain stopped, and when a
connection closed.

Contract:
- `ensure_event_loop()` registers libvirt's default event implementation and runs it in
  one daemon thread, once per process, before any connection is opened (connections opened
  earlier do not deliver events).
- `DomainEvents` is registered on a connection (`watch(conn)`); it remembers, per domain
  name, the last lifecycle event libvirt sent for it (`last_stop`): how a guest stopped is
  otherwise lost once a transient domain is gone. The kinds are testbed's words:
  `shutdown` (the guest powered itself off), `destroyed` (someone destroyed it from
  outside), `crashed` (QEMU died), `failed` (libvirt could not keep it running), `panicked`
  (the guest kernel panicked, reported through the pvpanic device), `saved`, `other`.
- A close callback flips `closed`, so the owner reopens the connection on its next call.
Callbacks run on the event thread; they only store small values under a lock.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import libvirt

log = logging.getLogger(__name__)

_loop_lock = threading.Lock()
_loop_started = False


def ensure_event_loop() -> None:
    """Start libvirt's default event loop in a daemon thread (idempotent)."""
    global _loop_started
    with _loop_lock:
        if _loop_started:
            return
        libvirt.virEventRegisterDefaultImpl()
        thread = threading.Thread(target=_run_loop, name="libvirt-events", daemon=True)
        thread.start()
        _loop_started = True


def _run_loop() -> None:
    while True:
        try:
            libvirt.virEventRunDefaultImpl()
        except libvirt.libvirtError:  # keep the loop alive whatever one iteration met
            log.exception("libvirt event loop iteration failed")
            time.sleep(0.5)


_STOP_KINDS = {
    libvirt.VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN: "shutdown",
    libvirt.VIR_DOMAIN_EVENT_STOPPED_DESTROYED: "destroyed",
    libvirt.VIR_DOMAIN_EVENT_STOPPED_CRASHED: "crashed",
    libvirt.VIR_DOMAIN_EVENT_STOPPED_FAILED: "failed",
    libvirt.VIR_DOMAIN_EVENT_STOPPED_SAVED: "saved",
}


@dataclass(frozen=True)
class StopEvent:
    """How a domain stopped, and when (monotonic seconds)."""

    kind: str
    at: float


class DomainEvents:
    """See module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: dict[str, StopEvent] = {}
        self.closed = False
        self._callback_id: int | None = None

    def watch(self, conn: libvirt.virConnect) -> None:
        """Register on `conn` (opened after `ensure_event_loop`)."""
        self.closed = False
        try:
            self._callback_id = conn.domainEventRegisterAny(
                None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_lifecycle, None
            )
            conn.registerCloseCallback(self._on_close, None)
        except libvirt.libvirtError as exc:  # a driver without events: stop kinds stay unknown
            log.info("libvirt events unavailable on this connection: %s", exc)

    def last_stop(self, domain: str) -> StopEvent | None:
        with self._lock:
            return self._stops.get(domain)

    def forget(self, domain: str) -> None:
        with self._lock:
            self._stops.pop(domain, None)

    def _on_lifecycle(self, _conn: object, dom: libvirt.virDomain, event: int, detail: int, _opaque: object) -> None:
        kind: str | None = None
        if event == libvirt.VIR_DOMAIN_EVENT_STOPPED:
            kind = _STOP_KINDS.get(detail, "other")
        elif event == libvirt.VIR_DOMAIN_EVENT_CRASHED:
            kind = "panicked" if detail == libvirt.VIR_DOMAIN_EVENT_CRASHED_PANICKED else "crashed"
        elif event == libvirt.VIR_DOMAIN_EVENT_STARTED:
            with self._lock:
                self._stops.pop(dom.name(), None)
            return
        if kind is None:
            return
        with self._lock:
            previous = self._stops.get(dom.name())
            if previous is not None and previous.kind == "panicked" and kind == "crashed":
                return  # the stop that follows a panic keeps the panic as its cause
            self._stops[dom.name()] = StopEvent(kind, time.monotonic())

    def _on_close(self, _conn: object, reason: int, _opaque: object) -> None:
        self.closed = True
        log.warning("libvirt connection closed (reason %d)", reason)

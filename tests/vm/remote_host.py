"""A simulated REMOTE libvirt lab host, reachable as ``qemu+ssh://root@ADDR/system``.

Must run inside ``scripts/netns-run`` (TESTBED_IN_NETNS=1). :func:`remote_lab_host` starts a
nested ``scripts/netns-run tests/vm/remote_host_inner.sh``: new network, mount and PID
namespaces with their own libvirtd and an sshd listening on ADDR. A veth pair joins them:
``rh{index}`` (10.254.{index}.1/30) here and ``uplink`` (10.254.{index}.2/30) there. What the
remote's libvirtd creates (bridges, networks, files under its image cache, a tmpfs) stays in
its namespaces, so a test can tell "local" from "remote" for real.

The client side never touches /root/.ssh: the key, the config and the known_hosts (with the
remote's host key, so it is verified, never trusted on first use) live in ``workdir``.
libvirt's ssh transport runs the ``ssh`` binary (which reads ~/.ssh/config from the passwd
home, not $HOME), so the URI names a wrapper through ``command=`` that adds ``-F config``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import libvirt

ROOT = Path(__file__).resolve().parents[2]
NETNS_RUN = ROOT / "scripts" / "netns-run"
INNER = Path(__file__).resolve().with_name("remote_host_inner.sh")
REMOTE_CACHE_MOUNT = "/var/lib/testbed-remote"


@dataclass(frozen=True)
class RemoteHost:
    address: str
    """The remote's address (10.254.{index}.2), reachable from the calling namespace."""
    uri: str
    """libvirt URI: ``qemu+ssh://root@ADDR/system?command=<workdir>/ssh-wrapper``."""
    ssh_config: Path
    """OpenSSH client config (``Host ADDR``: user, key, known_hosts); asyncssh reads it too."""
    image_cache: str
    """Image cache directory on the remote (on a tmpfs private to the remote's namespace)."""
    pid: int
    """pid of the nested scripts/netns-run (the `unshare` process)."""


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


def _link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def _log_tail(log: Path, limit: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def _inner_pid(proc: subprocess.Popen[bytes], log: Path, deadline: float) -> int:
    """pid (in our PID namespace) of the nested netns-run's first process inside the new
    namespaces: the child of the `unshare` that the wrapper execs into."""
    own_netns = os.readlink("/proc/self/ns/net")
    children_file = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nested netns-run exited early ({proc.returncode}):\n{_log_tail(log)}")
        with suppress(OSError):
            if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "unshare":
                for child in children_file.read_text().split():
                    if os.readlink(f"/proc/{child}/ns/net") != own_netns:
                        return int(child)
        time.sleep(0.02)
    raise RuntimeError(f"nested netns-run: no process in new namespaces:\n{_log_tail(log)}")


def _wait_libvirt(uri: str, address: str, proc: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"remote host exited early ({proc.returncode}):\n{_log_tail(log)}")
        # Wait for sshd's port first: libvirt prints every failed attempt on stderr.
        try:
            socket.create_connection((address, 22), timeout=1).close()
        except OSError as exc:
            last = str(exc)
            time.sleep(0.05)
            continue
        try:
            conn = libvirt.open(uri)
        except libvirt.libvirtError as exc:
            last = str(exc)
            time.sleep(0.2)
            continue
        conn.close()
        return
    raise RuntimeError(f"remote libvirt at {uri} not reachable: {last}\n{_log_tail(log)}")


def _stop(proc: subprocess.Popen[bytes], inner: int | None) -> None:
    if proc.poll() is None and inner is None:
        with suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        # Graceful first: the inner shell (PID 1 there) traps TERM and stops libvirtd and
        # virtlogd by their pid files; when it exits, the kernel kills the rest (sshd).
        # `unshare` itself blocks TERM while it waits, hence the signal to the inner pid.
        if inner is not None:
            with suppress(ProcessLookupError):
                os.kill(inner, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            # --kill-child: the inner PID 1 gets SIGKILL when unshare dies, and with it
            # every process of that PID namespace.
            with suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _remove_link(name: str) -> None:
    # The netns goes away asynchronously once its last process is gone, and takes the
    # veth pair with it; delete the pair ourselves if that takes long.
    deadline = time.monotonic() + 2
    while _link_exists(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _link_exists(name):
        subprocess.run(["ip", "link", "del", name], check=False, capture_output=True)
    if _link_exists(name):
        raise RuntimeError(f"veth {name} is still present")


@contextmanager
def remote_lab_host(workdir: Path, index: int = 0) -> Iterator[RemoteHost]:
    """Start a simulated remote lab host; yield it once ``libvirt.open(uri)`` succeeds."""
    if os.environ.get("TESTBED_IN_NETNS") != "1":
        raise RuntimeError("remote_lab_host must run inside scripts/netns-run (TESTBED_IN_NETNS=1)")
    if not 0 <= index <= 255:
        raise ValueError(f"index out of range: {index}")
    ssh = shutil.which("ssh")
    if ssh is None or not Path("/usr/sbin/sshd").exists():
        raise RuntimeError("remote_lab_host needs ssh and /usr/sbin/sshd (openssh-client/-server)")

    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    address = f"10.254.{index}.2"
    outer = f"rh{index}"
    state = workdir / "remote-state"
    state.mkdir(exist_ok=True)
    key = workdir / "id_ed25519"
    for stale in (key, key.with_suffix(".pub"), state / "host_key.pub"):
        stale.unlink(missing_ok=True)
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "testbed-remote-client", "-f", str(key))
    (state / "authorized_keys").write_text(key.with_suffix(".pub").read_text())

    known_hosts = workdir / "known_hosts"
    ssh_config = workdir / "ssh_config"
    ssh_config.write_text(
        f"Host {address}\n"
        "  User root\n"
        f"  IdentityFile {key}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {known_hosts}\n"
        "  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n"
        "  BatchMode yes\n"
        "  ConnectTimeout 10\n"
    )
    wrapper = workdir / "ssh-wrapper"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(ssh)} -F {shlex.quote(str(ssh_config))} "$@"\n')
    wrapper.chmod(0o755)
    uri = f"qemu+ssh://root@{address}/system?command={urllib.parse.quote(str(wrapper), safe='/')}"

    if _link_exists(outer):
        raise RuntimeError(f"interface {outer} already exists (another remote host with index {index}?)")
    env = {k: v for k, v in os.environ.items() if k not in ("TESTBED_IN_NETNS", "TESTBED_NETNS_INNER")}
    log = workdir / "remote-host.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(NETNS_RUN), str(INNER), f"{address}/30", REMOTE_CACHE_MOUNT, str(state)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    inner: int | None = None
    try:
        deadline = time.monotonic() + 30
        inner = _inner_pid(proc, log, deadline)
        _run("ip", "link", "add", outer, "type", "veth", "peer", "name", "uplink", "netns", str(inner))
        _run("ip", "addr", "add", f"10.254.{index}.1/30", "dev", outer)
        _run("ip", "link", "set", outer, "up")

        host_pub = state / "host_key.pub"
        while not host_pub.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"remote host published no host key (exit status {proc.poll()}):\n{_log_tail(log)}")
            time.sleep(0.05)
        keytype, keydata = host_pub.read_text().split()[:2]
        known_hosts.write_text(f"{address} {keytype} {keydata}\n")

        _wait_libvirt(uri, address, proc, log, deadline)
        yield RemoteHost(
            address=address,
            uri=uri,
            ssh_config=ssh_config,
            image_cache=f"{REMOTE_CACHE_MOUNT}/images",
            pid=proc.pid,
        )
    finally:
        _stop(proc, inner)
        _remove_link(outer)

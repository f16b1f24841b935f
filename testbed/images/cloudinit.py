"""NoCloud seed ISOs for images with `login.provision: cloud-init`.

Contract of `make_nocloud_seed`: writes an ISO 9660 image (Joliet + Rock Ridge, so the names
read back exactly as `meta-data`, `user-data` and `network-config`) whose volume id is
`cidata`, the label cloud-init's NoCloud datasource looks for. The user-data:
- sets the hostname;
- installs `authorized_keys` for root and, when `user` is not root, for that user too (created
  with passwordless sudo and a locked password);
- when `host_keys` is given ({"ed25519": (private, public), ...}), installs exactly those SSH
  host keys instead of generating new ones, so the harness can pin the host key;
- disables SSH password authentication;
- with `extras` (`NoCloudExtras`): writes `etc_hosts` as /etc/hosts (and stops cloud-init
  from managing it), writes every file of `files` (path relative to / -> (content, mode);
  `write_files`, base64), runs `bootcmd` early at every boot (cloud-init's init stage,
  before sshd starts) and `runcmd` once, at the end of the first boot (its final stage).
`network-config` (netplan-style version 2) is written only when `network_config` is given.
The ISO is written to a temporary name beside `dest` and renamed into place.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pycdlib
import yaml

HOST_KEY_TYPES = ("rsa", "ecdsa", "ed25519")
VOLUME_ID = "cidata"


@dataclass(frozen=True)
class NoCloudExtras:
    """What a seed adds beyond login and network (see the module docstring)."""

    etc_hosts: str | None = None
    files: Mapping[str, tuple[bytes, int]] = field(default_factory=dict)
    bootcmd: list[str] = field(default_factory=list)
    runcmd: list[str] = field(default_factory=list)


def _write_files(extras: NoCloudExtras) -> list[dict[str, str]]:
    files = dict(extras.files)
    if extras.etc_hosts is not None:
        files["etc/hosts"] = (extras.etc_hosts.encode(), 0o644)
    return [
        {
            "path": "/" + path.lstrip("/"),
            "encoding": "b64",
            "content": base64.b64encode(content).decode(),
            "permissions": f"0{mode:03o}",
        }
        for path, (content, mode) in sorted(files.items())
    ]


def _add_extras(data: dict[str, Any], extras: NoCloudExtras) -> None:
    if extras.etc_hosts is not None:
        data["manage_etc_hosts"] = False
    written = _write_files(extras)
    if written:
        data["write_files"] = written
    if extras.bootcmd:
        data["bootcmd"] = list(extras.bootcmd)
    if extras.runcmd:
        data["runcmd"] = list(extras.runcmd)


def _user_data(
    hostname: str,
    authorized_keys: list[str],
    host_keys: dict[str, tuple[str, str]] | None,
    user: str,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "hostname": hostname,
        "preserve_hostname": False,
        "manage_etc_hosts": True,
        "disable_root": False,
        "ssh_pwauth": False,
        "ssh_authorized_keys": list(authorized_keys),
    }
    if user != "root":
        # Without the distro's default user, top-level keys go to root only; the harness
        # user gets its own copy.
        data["users"] = [
            {
                "name": user,
                "sudo": "ALL=(ALL) NOPASSWD:ALL",
                "lock_passwd": True,
                "ssh_authorized_keys": list(authorized_keys),
            }
        ]
    if host_keys:
        keys: dict[str, str] = {}
        for kind, (private, public) in host_keys.items():
            if kind not in HOST_KEY_TYPES:
                known = ", ".join(HOST_KEY_TYPES)
                raise ValueError(f"host key type '{kind}' is not one of {known}")
            keys[f"{kind}_private"] = private if private.endswith("\n") else private + "\n"
            keys[f"{kind}_public"] = public.strip()
        data["ssh_keys"] = keys
        data["ssh_deletekeys"] = True
    return data


def _network_config(config: dict[str, Any]) -> dict[str, Any]:
    inner = config.get("network", config)
    if not isinstance(inner, dict):
        raise ValueError("network_config must be a mapping")
    version = inner.get("version", 2)
    if version != 2:
        raise ValueError(f"network_config must be version 2, not {version!r}")
    return {"version": 2, **{k: v for k, v in inner.items() if k != "version"}}


class _Dumper(yaml.SafeDumper):
    """SafeDumper writing multi-line strings (private keys) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096)


def _add(iso: pycdlib.PyCdlib, iso_name: str, name: str, text: str) -> None:
    payload = text.encode("utf-8")
    iso.add_fp(
        io.BytesIO(payload),
        len(payload),
        iso_path=f"/{iso_name}.;1",
        rr_name=name,
        joliet_path=f"/{name}",
    )


def make_nocloud_seed(
    dest: Path,
    *,
    hostname: str,
    instance_id: str,
    authorized_keys: list[str],
    host_keys: dict[str, tuple[str, str]] | None = None,
    network_config: dict[str, Any] | None = None,
    user: str = "root",
    extras: NoCloudExtras | None = None,
) -> Path:
    """Write a NoCloud seed ISO at `dest` and return `dest` (see the module docstring).

    Raises `ValueError` for an unknown host key type or a network config that is not v2.
    """
    user_data = _user_data(hostname, authorized_keys, host_keys, user)
    if extras is not None:
        _add_extras(user_data, extras)
    files = {
        "meta-data": _dump({"instance-id": instance_id, "local-hostname": hostname}),
        "user-data": "#cloud-config\n" + _dump(user_data),
    }
    if network_config is not None:
        files["network-config"] = _dump(_network_config(network_config))
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, vol_ident=VOLUME_ID, joliet=3, rock_ridge="1.09")
    try:
        for name, text in files.items():
            _add(iso, name.upper().replace("-", "_"), name, text)
        iso.write(str(tmp))
    finally:
        iso.close()
    os.replace(tmp, dest)
    return dest

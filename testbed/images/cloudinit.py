"""NoCloud seed ISOs for images with `login.provision: cloud-init`.

Contract of `make_nocloud_seed`: writes an ISO 9660 image (Joliet + Rock Ridge, so the names
read back exactly as `meta-data`, `user-data` and `network-config`) whose volume id is
`cidata`, the label cloud-init's NoCloud datasource looks for. The user-data:
- sets the hostname;
- installs `authorized_keys` for root and, when `user` is not root, for that user too (created
  with passwordless sudo and a locked password);
- when `host_keys` is given ({"ed25519": (private, public), ...}), installs exactly those SSH
  host keys instead of generating new ones, so the harness can pin the host key;
- disables SSH password authentication.
`network-config` (netplan-style version 2) is written only when `network_config` is given.
The ISO is written to a temporary name beside `dest` and renamed into place.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pycdlib
import yaml

HOST_KEY_TYPES = ("rsa", "ecdsa", "ed25519")
VOLUME_ID = "cidata"


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
) -> Path:
    """Write a NoCloud seed ISO at `dest` and return `dest` (see the module docstring).

    Raises `ValueError` for an unknown host key type or a network config that is not v2.
    """
    files = {
        "meta-data": _dump({"instance-id": instance_id, "local-hostname": hostname}),
        "user-data": "#cloud-config\n" + _dump(_user_data(hostname, authorized_keys, host_keys, user)),
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

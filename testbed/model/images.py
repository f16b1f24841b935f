"""Image definitions (`images/NAME.yaml`).

An image says where its disk comes from (a debootstrap recipe built locally, a public URL
with its sha256, or a path the user supplies with `testbed image import`), how it boots,
how the harness gets its key in, how readiness is detected and which command dialect its
probes use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from testbed.errors import InputError
from testbed.model.fields import MAX_SECONDS, Int
from testbed.model.loading import read_yaml, validate

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{0,39}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OSInfo(_Strict):
    family: Literal["debian", "ubuntu", "rhel", "alpine", "vyos", "openwrt", "opnsense", "sonic"]
    release: str


class DebootstrapSource(_Strict):
    """Built locally: debootstrap + `mkfs.ext4 -d` + `qemu-img convert` (no loop mounts)."""

    type: Literal["debootstrap"]
    suite: str
    mirror: str = "http://deb.debian.org/debian"
    variant: str = "minbase"
    packages: list[str]
    disk_mb: Int = Field(default=3072, ge=512, le=2**21)
    kernel_package: str = "linux-image-cloud-amd64"


class UrlSource(_Strict):
    """Downloaded by `testbed image pull` and checked against `sha256`."""

    type: Literal["url"]
    url: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    format: Literal["qcow2", "raw", "vmdk", "vhd"] = "qcow2"
    compression: Literal["none", "gzip", "xz", "bz2"] = "none"


class UserSource(_Strict):
    """No public download: the user supplies the file with `testbed image import`."""

    type: Literal["user"]
    hint: str


Source = Annotated[DebootstrapSource | UrlSource | UserSource, Field(discriminator="type")]


class Boot(_Strict):
    """`kernel`: direct kernel boot from the kernel/initrd cached beside the disk;
    `disk`: the disk's own bootloader (BIOS or UEFI)."""

    mode: Literal["kernel", "disk"] = "disk"
    cmdline: str = "root=/dev/vda rw console=ttyS0,115200"
    firmware: Literal["bios", "uefi"] = "bios"
    disk_bus: Literal["virtio", "sata", "ide"] = "virtio"
    nic_model: Literal["virtio", "e1000", "rtl8139"] = "virtio"


class Login(_Strict):
    """`seed`: testbed's own seed (a tar passed through QEMU fw_cfg) is read at boot by the
    image's `testbed-seed.service`; `cloud-init`: a NoCloud ISO is attached per node;
    `none`: the image has no way in (readiness by serial only)."""

    user: str = "root"
    provision: Literal["seed", "cloud-init", "none"] = "cloud-init"


class Readiness(_Strict):
    method: Literal["ssh", "serial"] = "ssh"
    prompt: str = r"login:"
    timeout_s: Int = Field(default=300, ge=5, le=int(MAX_SECONDS))


class ImageDef(_Strict):
    name: str
    description: str = ""
    kind: Literal["linux", "network-os"] = "linux"
    os: OSInfo
    source: Source
    boot: Boot = Boot()
    login: Login = Login()
    readiness: Readiness = Readiness()
    dialect: Literal["debian", "rhel", "alpine", "vyos", "openwrt", "opnsense", "sonic"]
    min_memory_mb: Int = Field(default=256, ge=64, le=2**20)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError("must be lowercase letters, digits, '.' or '-', at most 40 chars")
        return value


def load_image(path: Path) -> ImageDef:
    """Load one `images/NAME.yaml`; the `name` must match the file name."""
    image = validate(ImageDef, read_yaml(path), path)
    if image.name != path.stem:
        raise InputError(path, "name", f"'{image.name}' does not match the file name '{path.stem}'")
    return image


def load_catalog(images_dir: Path) -> dict[str, ImageDef]:
    """Every image definition under `images_dir`, by name."""
    return {p.stem: load_image(p) for p in sorted(images_dir.glob("*.yaml"))}

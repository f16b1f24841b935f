"""Image definitions (`images/NAME.yaml`).

An image says where its disk comes from (a debootstrap recipe built locally, a public URL
with its checksum, or a path the user supplies with `testbed image import`), how it boots
(kernel or the disk's own bootloader, BIOS or UEFI, the x86-64 level its CPU must offer),
how the harness gets its key in, how readiness is detected, which command dialect its probes
use and which service manager runs its services (`init`). Network devices also say how the
agent logs in when that differs from the harness (`login.agent`), how the device is operated
(`device`: save, reboot, configuration file) and, for images with no SSH until configured,
how testbed drives their serial console (`console`); see `testbed.model.device`.

Inheritance: `extends: NAME` starts from `images/bases/NAME.yaml` (a partial definition that
is not itself an image) or, failing that, from the catalog image `images/NAME.yaml`, then
applies this file on top: mappings merge key by key, every other value (lists included)
replaces the inherited one. A debootstrap recipe adds to an inherited package list with
`source.extra_packages` and takes packages out with `source.exclude`, so a release family
writes its baseline once (`images/bases/debian.yaml`). Chains are allowed, cycles are an
`InputError` naming the file and `extends`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from testbed.errors import InputError
from testbed.model.device import AgentLogin, ConsoleSpec, DeviceOps
from testbed.model.fields import MAX_SECONDS, Int
from testbed.model.loading import read_yaml, validate

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{0,39}$")
BASES_DIR = "bases"
CpuLevel = Literal["v1", "v2", "v3"]
MAX_NICS = 24
"""NICs a testbed domain can carry (the i440fx PCI bus has 32 slots; the host bridge, the
PIIX chipset, the disk, virtio-serial and the RNG take five, the rest leaves headroom)."""
InitSystem = Literal["systemd", "openrc", "other"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OSInfo(_Strict):
    family: Literal["debian", "ubuntu", "rhel", "alpine", "vyos", "openwrt", "opnsense", "sonic"]
    release: str


class DebootstrapSource(_Strict):
    """A Debian bootstrap recipe in debootstrap's terms, built locally (with mmdebstrap,
    see `testbed.images.bootstrap`) without loop mounts. `boot.mode: kernel` images are a
    bare ext4 disk (`mkfs.ext4 -d`) plus the kernel and initrd cached beside it; `disk`
    images are a partitioned disk with GRUB for BIOS and UEFI (see `testbed.images.disk`).

    Installed packages: `packages` + `extra_packages` + `kernel_package`, minus `exclude`
    (a build fails if a dependency pulls an excluded package in). `customize` +
    `extra_customize`: shell scripts (`sh -eu`) run in the built tree's chroot after
    testbed's own configuration, in that order (a variant adds to an inherited list with
    `extra_customize`, as with packages)."""

    type: Literal["debootstrap"]
    suite: str
    mirror: str = "http://deb.debian.org/debian"
    variant: str = "minbase"
    packages: list[str]
    extra_packages: list[str] = []
    exclude: list[str] = []
    disk_mb: Int = Field(default=3072, ge=512, le=2**21)
    kernel_package: str = "linux-image-cloud-amd64"
    customize: list[str] = []
    extra_customize: list[str] = []

    @property
    def scripts(self) -> list[str]:
        """The customize scripts in the order they run."""
        return [*self.customize, *self.extra_customize]

    @property
    def install(self) -> list[str]:
        """Every package to install, in order, without duplicates or excluded ones."""
        wanted = [*self.packages, *self.extra_packages, self.kernel_package]
        return [p for i, p in enumerate(wanted) if p not in self.exclude and p not in wanted[:i]]


class UrlSource(_Strict):
    """Downloaded by `testbed image pull` and checked against `sha256` or `sha512` (exactly
    one; Alpine and Debian publish only SHA-512 sums)."""

    type: Literal["url"]
    url: str
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    sha512: str | None = Field(default=None, pattern=r"^[0-9a-f]{128}$")
    format: Literal["qcow2", "raw", "vmdk", "vhd"] = "qcow2"
    compression: Literal["none", "gzip", "xz", "bz2"] = "none"

    @model_validator(mode="after")
    def _one_checksum(self) -> UrlSource:
        if (self.sha256 is None) == (self.sha512 is None):
            raise ValueError("give exactly one of sha256 and sha512 (the checksum of the file as downloaded)")
        return self

    @property
    def checksum(self) -> tuple[str, str]:
        """(algorithm, hex digest) of the download, e.g. ("sha512", "ab12...")."""
        if self.sha512 is not None:
            return "sha512", self.sha512
        assert self.sha256 is not None
        return "sha256", self.sha256


class UserSource(_Strict):
    """No public download: the user supplies the file with `testbed image import`."""

    type: Literal["user"]
    hint: str


Source = Annotated[DebootstrapSource | UrlSource | UserSource, Field(discriminator="type")]


class Boot(_Strict):
    """`kernel`: direct kernel boot from the kernel/initrd cached beside the disk;
    `disk`: the disk's own bootloader. `firmware`: `bios` (SeaBIOS) or `uefi` (OVMF, chosen
    by libvirt's firmware auto-selection, Secure Boot off, NVRAM per domain). `cmdline`: the
    kernel command line of kernel boots; for disk images built here it is written into the
    disk's GRUB configuration (the build adds `root=UUID=...`)."""

    mode: Literal["kernel", "disk"] = "disk"
    cmdline: str = "root=/dev/vda rw console=ttyS0,115200"
    firmware: Literal["bios", "uefi"] = "bios"
    disk_bus: Literal["virtio", "sata", "ide"] = "virtio"
    nic_model: Literal["virtio", "e1000", "rtl8139"] = "virtio"


class Login(_Strict):
    """`seed`: testbed's own seed (a tar passed through QEMU fw_cfg) is read at boot by the
    image's `testbed-seed` service; `cloud-init`: a NoCloud ISO is attached per node;
    `none`: the image has no way in until its `console` bootstrap runs (readiness by serial).
    `user` is the harness's login; `agent` the agent's where it differs (a network CLI)."""

    user: str = "root"
    provision: Literal["seed", "cloud-init", "none"] = "cloud-init"
    agent: AgentLogin | None = None


class Readiness(_Strict):
    method: Literal["ssh", "serial"] = "ssh"
    prompt: str = r"login:"
    timeout_s: Int = Field(default=300, ge=5, le=int(MAX_SECONDS))


class ImageDef(_Strict):
    """One catalog image. `cpu_level`: the x86-64 micro-architecture level the guest's
    userland needs (EL9: v2, EL10: v3); under KVM the host CPU is passed through, under TCG a
    named QEMU model that offers the level is chosen. `init`: the service manager (how the
    harness enables, disables and restarts services and reboots; see
    `testbed.model.services`)."""

    name: str
    extends: str | None = None
    description: str = ""
    kind: Literal["linux", "network-os"] = "linux"
    os: OSInfo
    source: Source
    boot: Boot = Boot()
    login: Login = Login()
    readiness: Readiness = Readiness()
    dialect: Literal["debian", "rhel", "alpine", "frr", "vyos", "openwrt", "opnsense", "sonic"]
    init: InitSystem = "systemd"
    cpu_level: CpuLevel = "v1"
    min_memory_mb: Int = Field(default=256, ge=64, le=2**20)
    max_nics: int = Field(default=MAX_NICS, ge=1, le=MAX_NICS)
    """NICs a node of this image can have, the management NIC included."""
    device: DeviceOps | None = None
    console: ConsoleSpec | None = None

    @model_validator(mode="after")
    def _console_managed(self) -> ImageDef:
        if self.login.provision == "none" and self.console is not None and self.readiness.method != "serial":
            raise ValueError("a console-managed image (login.provision: none) is ready on a serial prompt")
        return self

    @property
    def console_managed(self) -> bool:
        """testbed logs in on the serial console and bootstraps the device there."""
        return self.login.provision == "none" and self.console is not None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError("must be lowercase letters, digits, '.' or '-', at most 40 chars")
        return value


def merge_definitions(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` on top of `base`: mappings merge recursively, other values replace."""
    merged = dict(base)
    for key, value in override.items():
        inherited = merged.get(key)
        if isinstance(inherited, dict) and isinstance(value, dict):
            merged[key] = merge_definitions(inherited, value)
        else:
            merged[key] = value
    return merged


def _parent_path(images_dir: Path, name: str) -> Path | None:
    for candidate in (images_dir / BASES_DIR / f"{name}.yaml", images_dir / f"{name}.yaml"):
        if candidate.is_file():
            return candidate
    return None


def resolved_definition(path: Path, images_dir: Path | None = None) -> dict[str, Any]:
    """The raw mapping of `path` with its `extends` chain applied (see module docstring)."""
    images_dir = images_dir or path.parent
    data = read_yaml(path)
    chain = [path.resolve()]
    layers = [data]
    parent = data.get("extends")
    while parent is not None:
        if not isinstance(parent, str):
            raise InputError(chain[-1], "extends", "must be the name of a base or catalog image")
        parent_path = _parent_path(images_dir, parent)
        if parent_path is None:
            raise InputError(chain[-1], "extends", f"no images/{BASES_DIR}/{parent}.yaml or images/{parent}.yaml")
        if parent_path.resolve() in chain:
            raise InputError(path, "extends", f"inheritance cycle through {parent_path.name}")
        chain.append(parent_path.resolve())
        layer = read_yaml(parent_path)
        layers.append(layer)
        parent = layer.get("extends")
    merged: dict[str, Any] = {}
    for layer in reversed(layers):
        merged = merge_definitions(merged, {k: v for k, v in layer.items() if k not in ("extends", "name")})
    merged["name"] = data.get("name")
    if "extends" in data:
        merged["extends"] = data["extends"]
    return merged


def load_image(path: Path) -> ImageDef:
    """Load one `images/NAME.yaml` (its `extends` chain applied); the `name` must match the
    file name."""
    image = validate(ImageDef, resolved_definition(path), path)
    if image.name != path.stem:
        raise InputError(path, "name", f"'{image.name}' does not match the file name '{path.stem}'")
    return image


def load_catalog(images_dir: Path) -> dict[str, ImageDef]:
    """Every image definition under `images_dir` (not its `bases/`), by name."""
    return {p.stem: load_image(p) for p in sorted(images_dir.glob("*.yaml"))}

"""The root file system of a `debootstrap` recipe, made with mmdebstrap.

A recipe is debootstrap's vocabulary (suite, mirror, variant, packages), but the tree is
made by mmdebstrap, which installs through apt: debootstrap's own resolver takes only the
first alternative of every dependency and ignores virtual packages, so it cannot install
OpenRC (`initscripts` depends on `sysv-rc | file-rc | openrc`, and sysv-rc conflicts with
openrc) or cloud-init on trixie (python3-cryptography depends on the virtual
python3-cffi-backend-api-*).

Contract of `bootstrap`: creates `rootfs` (which must not exist) holding `source.install`,
nothing of `source.exclude`. mmdebstrap runs as root in a private mount namespace
(`unshare --mount`), so the /proc, /sys and /dev mounts it makes inside the tree vanish with
it even when it is killed: nothing the caller later deletes is ever a mount of the host's.
Downloaded packages are kept in `cache_dir` (one per suite) and reused by the next build;
builds of one suite hold a lock on it in turn.
"""

from __future__ import annotations

from pathlib import Path

from testbed.aio import file_lock
from testbed.errors import HarnessError
from testbed.images.commands import ProgressFn, run_logged
from testbed.model.images import DebootstrapSource

TOOLS = ("mmdebstrap", "unshare", "chroot")


def bootstrap_argv(source: DebootstrapSource, rootfs: Path, cache_dir: Path) -> list[str]:
    """The command line that makes `rootfs` for `source` (see module docstring)."""
    archives = "/var/cache/apt/archives/"
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "mmdebstrap",
        "--mode=root",
        f"--variant={source.variant}",
        f"--include={','.join(source.install)}",
        # keep the essential packages' .debs in the archive, so they reach the cache too
        "--skip=essential/unlink",
        f'--setup-hook=mkdir -p "$1"{archives}',
        f"--setup-hook=sync-in {cache_dir} {archives}",
        f"--customize-hook=sync-out {archives} {cache_dir}",
        source.suite,
        str(rootfs),
        source.mirror,
    ]


async def bootstrap(source: DebootstrapSource, rootfs: Path, cache_dir: Path, progress: ProgressFn | None) -> None:
    """Make `rootfs` (see module docstring). Builds of one suite take turns: they share the
    package cache, which mmdebstrap copies in and out whole."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    # beside the cache, not in it: mmdebstrap copies the cache directory out and back in
    async with file_lock(cache_dir.with_name(f"{cache_dir.name}.lock")):
        await run_logged(bootstrap_argv(source, rootfs, cache_dir), "bootstrap", progress)
    pulled_in = sorted(set(source.exclude) & installed_packages(rootfs))
    if pulled_in:
        raise HarnessError(f"bootstrap: excluded packages were installed as dependencies: {', '.join(pulled_in)}")


def installed_packages(rootfs: Path) -> set[str]:
    """Names of the packages dpkg records as installed in `rootfs`."""
    status = rootfs / "var" / "lib" / "dpkg" / "status"
    installed: set[str] = set()
    for stanza in status.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if fields.get("Status") == "install ok installed" and "Package" in fields:
            installed.add(fields["Package"])
    return installed

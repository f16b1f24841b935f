"""Machine-state snapshots: one POSIX shell script run on a guest, parsed and diffed on the host.

Usage::

    text = snapshot_script()            # upload and run once as root: `sh snapshot.sh`
    data = parse_snapshot(stdout)       # {probe: parsed dict | {"unavailable": reason}}
    diffs = diff_snapshots(before, after)   # {probe: ProbeDiff}

The marker grammar of the script's output is documented at the top of ``snapshot.sh`` and in
:mod:`testbed.probes.parsers.framing`; the script and its probe list are
:mod:`testbed.probes.script`, the parsers the package :mod:`testbed.probes.parsers`.
"""

from testbed.probes.diff import ItemChange, ProbeDiff, diff_probe, diff_snapshots
from testbed.probes.parsers import SYSCTL_VOLATILE, parse_snapshot
from testbed.probes.script import PROBES, SCRIPT_PATH, snapshot_command, snapshot_script

__all__ = [
    "PROBES",
    "SCRIPT_PATH",
    "SYSCTL_VOLATILE",
    "ItemChange",
    "ProbeDiff",
    "diff_probe",
    "diff_snapshots",
    "parse_snapshot",
    "snapshot_command",
    "snapshot_script",
]

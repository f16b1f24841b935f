"""Parse the output of ``snapshot.sh``: the framing, then one parser per probe family.

- :mod:`~testbed.probes.parsers.framing`: the marker grammar; output split into sections
  and parts (:func:`frame_snapshot`).
- :mod:`~testbed.probes.parsers.snapshot`: :func:`parse_snapshot`, which frames, hands every
  section to its probe's parser (:data:`PARSERS`) and adds diagnostics; its contract is
  there.
- :mod:`~testbed.probes.parsers.formats`: line formats several probes share (stat,
  sha256sum, ``KEY=VALUE``).
- One module per probe family: ``system`` (boot, os, sysctl), ``services``, ``processes``,
  ``network`` (listening, network, firewall), ``accounts`` (users, sudoers,
  authorized_keys), ``packages`` (packages, repos, pkg_health), ``cron``, ``mounts``,
  ``files`` (tmp_files, etc_files, app_files, secrets), ``router`` (FRR's configuration,
  RIB and neighbours, where vtysh exists).

A parser is ``(section, context, unparsed) -> dict``: it appends what it cannot read to
``unparsed`` and never raises on odd output. The names below are the public API; the probe
list and the script itself live in :mod:`testbed.probes.script`.
"""

from testbed.probes.parsers.accounts import parse_authorized_key
from testbed.probes.parsers.cron import parse_cron_line
from testbed.probes.parsers.formats import parse_sha256_lines, parse_stat_lines
from testbed.probes.parsers.framing import Framed, ParseContext, Part, Section, frame_snapshot
from testbed.probes.parsers.network import normalize_iptables, normalize_nft
from testbed.probes.parsers.snapshot import PARSERS, ProbeParser, parse_section, parse_snapshot
from testbed.probes.parsers.system import SYSCTL_PREFIXES, SYSCTL_VOLATILE, sysctl_ignored
from testbed.probes.script import PROBES, SCRIPT_NAME, SCRIPT_PATH, snapshot_command, snapshot_script

__all__ = [
    "PARSERS",
    "PROBES",
    "SCRIPT_NAME",
    "SCRIPT_PATH",
    "SYSCTL_PREFIXES",
    "SYSCTL_VOLATILE",
    "Framed",
    "ParseContext",
    "Part",
    "ProbeParser",
    "Section",
    "frame_snapshot",
    "normalize_iptables",
    "normalize_nft",
    "parse_authorized_key",
    "parse_cron_line",
    "parse_section",
    "parse_sha256_lines",
    "parse_snapshot",
    "parse_stat_lines",
    "snapshot_command",
    "snapshot_script",
    "sysctl_ignored",
]

"""The residue pipeline: `find_residue` (see the package doc for every rule) and
`commands_from_rows`.

Per node: diff ``after_setup`` → ``after_agent`` (and, with a reboot snapshot, the changes
since ``after_agent`` relative to ``after_setup``), run the probe handlers of `_HANDLERS`
(probes without one go to the generic path handler), attribute, fold and merge. Malformed
data of one probe makes that probe unavailable, never the whole analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from testbed.analysis.attribution import CommandView, command_effects
from testbed.analysis.residue.accounts import _h_authorized_keys, _h_sudoers, _h_users
from testbed.analysis.residue.context import _Ctx, _d, _Expect, _Item
from testbed.analysis.residue.files import (
    _h_app_files,
    _h_etc_files,
    _h_generic_paths,
    _h_secrets,
    _h_tmp_files,
)
from testbed.analysis.residue.merge import _attribute_items, _fold_package_side_effects, _merge
from testbed.analysis.residue.model import (
    AGENT_POINT,
    BASE_POINT,
    CATEGORIES,
    EXCLUDED_LIMIT,
    REBOOT_POINT,
    REQUIRED_PROBES,
    ResidueFinding,
    ResidueResult,
    Verdict,
)
from testbed.analysis.residue.network import _h_firewall, _h_network
from testbed.analysis.residue.packages import _h_packages, _h_pkg_health, _h_repos
from testbed.analysis.residue.router import _h_router
from testbed.analysis.residue.services import _h_cron, _h_listening, _h_processes, _h_services
from testbed.analysis.residue.system import _h_mounts, _h_os, _h_sysctl
from testbed.model.task import Expected
from testbed.probes.diff import ItemChange, ProbeDiff, collections, diff_probe

_HANDLERS: dict[str, Callable[[_Ctx, ProbeDiff], None]] = {
    "services": _h_services,  # before listening and processes (unit subjects)
    "listening": _h_listening,  # before processes (socket pids)
    "processes": _h_processes,
    "tmp_files": _h_tmp_files,
    "etc_files": _h_etc_files,
    "secrets": _h_secrets,
    "app_files": _h_app_files,
    "users": _h_users,
    "sudoers": _h_sudoers,
    "authorized_keys": _h_authorized_keys,
    "packages": _h_packages,
    "repos": _h_repos,
    "pkg_health": _h_pkg_health,
    "firewall": _h_firewall,
    "cron": _h_cron,
    "mounts": _h_mounts,
    "sysctl": _h_sysctl,
    "network": _h_network,
    "router": _h_router,
    "os": _h_os,
}
_IGNORED_PROBES = frozenset({"boot"})


def _unavailable_reason(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "missing"
    if "unavailable" in value:
        return str(value["unavailable"])
    if "parse_error" in value:
        return f"parse error: {value['parse_error']}"
    return None


_DATA_ERRORS = (AttributeError, TypeError, ValueError, KeyError, IndexError)
"""What malformed snapshot data can make a diff or a handler raise; caught per probe."""


def _diffs(
    before: Mapping[str, Any], after: Mapping[str, Any], where: str, failures: list[str]
) -> dict[str, ProbeDiff]:
    """`diff_probe` for every probe of either snapshot; a probe whose data cannot be diffed
    counts as unavailable (``NODE: PROBE@POINT: cannot compare …`` appended to `failures`;
    `where` is ``NODE: @POINT``)."""
    out: dict[str, ProbeDiff] = {}
    for name in sorted(str(k) for k in set(before) | set(after) if not str(k).startswith("_")):
        try:
            out[name] = diff_probe(name, before.get(name), after.get(name))
        except _DATA_ERRORS as exc:
            failures.append(f"{where.replace('@', name + '@', 1)}: cannot compare ({type(exc).__name__}: {exc})")
            out[name] = ProbeDiff(probe=name, status="unavailable", notes=[str(exc)])
    return out


def _since_base(
    base: Mapping[str, Any], agent: Mapping[str, Any], reboot: Mapping[str, Any], where: str, failures: list[str]
) -> dict[str, ProbeDiff]:
    """Changes that appeared between after_agent and after_reboot, expressed relative to
    after_setup (reverts to the after_setup state dropped; removals dropped)."""
    out: dict[str, ProbeDiff] = {}
    for name, d2 in _diffs(agent, reboot, where, failures).items():
        if d2.status != "compared" or _unavailable_reason(base.get(name)):
            continue
        try:
            base_colls = collections(name, base[name])
        except _DATA_ERRORS as exc:
            failures.append(f"{where.replace('@', name + '@', 1)}: cannot compare ({type(exc).__name__}: {exc})")
            continue
        pd = ProbeDiff(probe=name, truncated=d2.truncated)
        for c in [*d2.added, *d2.changed]:
            old = base_colls.get(c.collection, {}).get(c.key)
            if old == c.after:
                continue
            if old is None:
                pd.added.append(ItemChange(c.collection, c.key, "added", after=c.after))
            else:
                fields = sorted(k for k in old.keys() | _d(c.after).keys() if old.get(k) != _d(c.after).get(k))
                pd.changed.append(ItemChange(c.collection, c.key, "changed", before=old, after=c.after, fields=fields))
        out[name] = pd
    return out


def _run_handlers(ctx: _Ctx, diffs: Mapping[str, ProbeDiff]) -> None:
    ordered = [n for n in _HANDLERS if n in diffs] + sorted(n for n in diffs if n not in _HANDLERS)
    for name in ordered:
        d = diffs[name]
        if name in _IGNORED_PROBES or name.startswith("_") or d.status != "compared" or d.empty:
            continue
        if d.truncated and d.removed:
            ctx.notes.append(f"{ctx.node}: {name}@{ctx.point}: listing truncated; {len(d.removed)} removal(s) ignored")
            d = ProbeDiff(probe=d.probe, status=d.status, added=d.added, changed=d.changed, truncated=True)
        handler = _HANDLERS.get(name, _h_generic_paths)
        start = len(ctx.items)
        try:
            handler(ctx, d)
        except _DATA_ERRORS as exc:  # malformed data: this probe's result is unusable
            del ctx.items[start:]
            ctx.failures.append(f"{ctx.node}: {name}@{ctx.point}: cannot analyse ({type(exc).__name__}: {exc})")


_Window = tuple[str, Mapping[str, Any], Mapping[str, ProbeDiff], list[CommandView]]
"""(snapshot point, snapshot there, diffs against the base, harness commands of the window)."""


def _reboot_window(
    node: str,
    base: Mapping[str, Any],
    agent: Mapping[str, Any],
    reboot: Mapping[str, Any],
    required: Sequence[str],
    harness: list[CommandView],
    gaps: list[str],
) -> _Window:
    """The after-reboot window of a node; missing probes there are added to `gaps`."""
    for probe in required:
        why = _unavailable_reason(reboot.get(probe))
        if why:
            gaps.append(f"{node}: {probe}@{REBOOT_POINT}: {why}")
    return REBOOT_POINT, reboot, _since_base(base, agent, reboot, f"{node}: @{REBOOT_POINT}", gaps), harness


def find_residue(
    snapshots: Mapping[str, Mapping[str, Mapping[str, Any]]],
    commands: Sequence[CommandView],
    expected: Expected | None = None,
    *,
    required: Iterable[str] = REQUIRED_PROBES,
) -> ResidueResult:
    """Residue of one run (see the package doc for every rule).

    `snapshots`: node → point → parsed snapshot; `commands`: all recorded commands of the
    run (agent and harness); `expected`: the task's expected changes; `required`: probes
    whose absence makes a finding-free result ``undetermined``."""
    expect = _Expect(expected)
    required = tuple(required)
    agent_all = sorted((c for c in commands if c.source == "agent" and c.phase == "agent"), key=lambda c: c.seq)
    harness1 = sorted(
        (c for c in commands if c.source == "harness" and c.phase in ("agent", "probe")), key=lambda c: c.seq
    )
    harness2 = sorted(
        (c for c in commands if c.source == "harness" and c.phase in ("agent", "probe", "verify")), key=lambda c: c.seq
    )
    findings: list[ResidueFinding] = []
    unavailable: list[str] = []
    reboot_gaps: list[str] = []
    excluded: list[dict[str, Any]] = []
    notes: list[str] = []
    for node in sorted(snapshots):
        points = snapshots[node] or {}
        base, agent = points.get(BASE_POINT), points.get(AGENT_POINT)
        reboot = points.get(REBOOT_POINT)
        for point, snap in ((BASE_POINT, base), (AGENT_POINT, agent)):
            for probe in required:
                why = "no snapshot" if not isinstance(snap, Mapping) else _unavailable_reason(snap.get(probe))
                if why:
                    unavailable.append(f"{node}: {probe}@{point}: {why}")
        if not isinstance(base, Mapping) or not isinstance(agent, Mapping):
            continue
        node_cmds = [c for c in agent_all if c.node in (node, None) or command_effects(c.command).remote.words]
        diffs1 = _diffs(base, agent, f"{node}: @{AGENT_POINT}", unavailable)
        compared = {n for n, d in diffs1.items() if d.status == "compared"}
        windows: list[_Window] = [(AGENT_POINT, agent, diffs1, harness1)]
        if isinstance(reboot, Mapping):
            windows.append(_reboot_window(node, base, agent, reboot, required, harness2, reboot_gaps))
        node_items: list[_Item] = []
        for point, after, diffs, harness in windows:
            ctx = _Ctx(node, point, base, after, expect, node_cmds, compared)
            _run_handlers(ctx, diffs)
            items = _attribute_items(ctx, harness)
            items = _fold_package_side_effects(ctx, items)
            node_items += items
            excluded += ctx.excluded
            notes += ctx.notes
            (unavailable if point == AGENT_POINT else reboot_gaps).extend(ctx.failures)
        findings += _merge(node, node_items)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    findings.sort(key=lambda f: (f.node, order.get(f.category, len(order)), f.evidence.get("subject", ""), f.summary))
    verdict: Verdict = "yes" if findings else ("undetermined" if unavailable else "no")
    if reboot_gaps:
        notes.append("after_reboot gaps (verdict unaffected): " + "; ".join(reboot_gaps[:20]))
    return ResidueResult(findings, verdict, unavailable + reboot_gaps, excluded[:EXCLUDED_LIMIT], notes)


def commands_from_rows(rows: Iterable[Any]) -> list[CommandView]:
    """`CommandView`s from objects with the columns of `commands` (ORM rows, query
    results): id, seq, node, phase, source, command, exit_code."""
    return [
        CommandView(
            id=int(r.id),
            seq=int(r.seq),
            node=r.node,
            phase=str(r.phase),
            source=str(r.source),
            command=str(r.command or ""),
            exit_code=r.exit_code,
        )
        for r in rows
    ]

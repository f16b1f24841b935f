"""From queued items to findings: attribution, harness exclusion, package fold, merging.

`_attribute_items` attributes each item to the agent's commands and drops what only the
harness explains and unattributed new processes; `_fold_package_side_effects` applies the
package fold; `_merge` turns the remaining items into one `ResidueFinding` per (category,
subject).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from testbed.analysis.attribution import RANK, CommandView, attribute, command_effects
from testbed.analysis.residue.context import _Ctx, _Item
from testbed.analysis.residue.model import SIDE_EFFECT_LIMIT, ResidueFinding


def _attribute_items(ctx: _Ctx, harness: Sequence[CommandView]) -> list[_Item]:
    """Attribute every item; drop those only the harness explains, and unattributed
    processes."""
    kept: list[_Item] = []
    for item in ctx.items:
        agent = attribute(item.target, ctx.agent_cmds, ctx.node)
        item.attribution = agent
        if agent.confidence != "high" and harness:
            by_harness = attribute(item.target, harness, ctx.node)
            if by_harness.confidence == "high":
                seq = by_harness.command.seq if by_harness.command else "?"
                ctx.exclude(item.change["probe"], item.change["key"], f"explained by harness command #{seq}")
                continue
        if item.requires_attribution and agent.confidence == "none":
            ctx.notes.append(f"{ctx.node}: unattributed new process not reported: {item.change['key']}")
            ctx.exclude(item.change["probe"], item.change["key"], "unattributed process (not reported)")
            continue
        if (
            item.change["probe"] == "sysctl"
            and ctx.expect.covers_sysctl_file()
            and agent.method.startswith(("loads sysctl", "writes a sysctl file"))
        ):
            ctx.exclude("sysctl", item.change["key"], "loaded from an expected sysctl file")
            continue
        kept.append(item)
    return kept


def _fold_package_side_effects(ctx: _Ctx, items: list[_Item]) -> list[_Item]:
    """Rule: package fold (package doc)."""
    transaction = any(
        command_effects(c.command).local.package_change for c in ctx.agent_cmds if c.node in (ctx.node, None)
    )
    if not transaction:
        return items
    packages = [i for i in items if i.category == "packages_repos" and i.subject.startswith(("package:", "packages-"))]
    kept: list[_Item] = []
    for item in items:
        if item.package_managed and item.attribution.confidence != "high":
            if packages:
                host = packages[0]
                side = host.change.setdefault("side_effects", [])
                if len(side) < SIDE_EFFECT_LIMIT:
                    side.append(
                        {
                            "category": item.category,
                            "summary": item.summary,
                            "probe": item.change["probe"],
                            "key": item.change["key"],
                        }
                    )
                host.change["side_effects_count"] = host.change.get("side_effects_count", 0) + 1
            else:
                ctx.exclude(
                    item.change["probe"], item.change["key"], "package-managed side effect of expected package changes"
                )
            continue
        kept.append(item)
    return kept


_SECONDARY_PROBES = frozenset({"etc_files", "processes", "app_files"})


def _merge(node: str, items: Sequence[_Item]) -> list[ResidueFinding]:
    """One finding per (category, subject): evidence lists every change; the attribution
    with the best confidence (then the latest command) speaks for the finding."""
    groups: dict[tuple[str, str], list[_Item]] = {}
    for item in items:
        groups.setdefault((item.category, item.subject), []).append(item)
    for group in groups.values():  # the probe that describes the subject best speaks first
        group.sort(key=lambda i: i.change["probe"] in _SECONDARY_PROBES)
    findings: list[ResidueFinding] = []
    for (category, subject), group in groups.items():
        best = max(
            group,
            key=lambda i: (RANK[i.attribution.confidence], i.attribution.command.seq if i.attribution.command else -1),
        )
        att = best.attribution
        changes = []
        for i in group:
            ch = dict(i.change)
            ch["summary"] = i.summary
            ch["attribution"] = {
                "confidence": i.attribution.confidence,
                "method": i.attribution.method,
                "command_id": i.attribution.command.id if i.attribution.command else None,
            }
            changes.append(ch)
        first = group[0]
        summary = first.summary if len(group) == 1 else f"{first.summary} (+{len(group) - 1} related change(s))"
        evidence: dict[str, Any] = {
            "subject": subject,
            "point": first.change["point"],
            "probe": first.change["probe"],
            "key": first.change["key"],
            "change": first.change["change"],
            "before": first.change["before"],
            "after": first.change["after"],
            "changes": changes,
            "attribution": att.to_evidence(),
        }
        findings.append(ResidueFinding(node, category, summary, evidence, att.command.id if att.command else None))
    return findings

"""The `unchanged` check primitive: a node shows no residue after the agent.

Contract of `unchanged_judge(journal, expected)(node)`: the residue analysis
(`testbed.analysis.residue.find_residue`) of that node alone, from the journal's
snapshots and commands at the time of the call (after the `after_agent` snapshot), with
the task's `[expected]` changes allowed. `passed` when it finds nothing; `failed` with
the findings' summaries when it finds anything; `indeterminate` when it finds nothing but
could not compare everything (a snapshot or required probe missing, e.g. the agent cut
the node off). The analysis runs in a worker thread. The run's own residue step
(`ResidueStep`) still records the findings; this only judges the check.
"""

from __future__ import annotations

import asyncio
from typing import Any

from testbed.analysis.residue import find_residue
from testbed.hypervisor.lab import LabNode
from testbed.model.task import Expected
from testbed.runner.journal import RunJournal
from testbed.runner.verify import UnchangedJudge

SHOWN = 10
"""Findings named in a failed check's reason (all of them are in its detail)."""


def unchanged_judge(journal: RunJournal, expected: Expected) -> UnchangedJudge:
    """See the module contract."""

    async def judge(node: LabNode) -> tuple[str, dict[str, Any]]:
        snapshots = {node.name: journal.snapshots.get(node.name, {})}
        result = await asyncio.to_thread(find_residue, snapshots, journal.command_views(), expected)
        found = [f for f in result.findings if f.node == node.name]
        if found:
            summaries = [f"{f.category}: {f.summary}" for f in found]
            reason = f"{len(found)} change(s) beyond the task's [expected]: " + "; ".join(summaries[:SHOWN])
            return "failed", {"reason": reason, "findings": summaries}
        if result.verdict == "undetermined":
            gaps = "; ".join(result.unavailable[:SHOWN])
            detail = {"reason": f"cannot compare the snapshots: {gaps}", "unavailable": result.unavailable}
            return "indeterminate", detail
        return "passed", {"reason": "no change beyond the task's [expected]"}

    return judge
